package plurality_test

import (
	"testing"

	"github.com/conclavehq/conclave/core/protocoltest"
	"github.com/conclavehq/conclave/plugins/protocol/plurality"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	protocoltest.Run(t, "plurality", plurality.New())
}

func FuzzScore(f *testing.F) {
	protocoltest.FuzzScore(f, "plurality", plurality.New())
}
