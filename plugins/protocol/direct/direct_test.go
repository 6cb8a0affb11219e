package direct_test

import (
	"testing"

	"github.com/conclavehq/conclave/core/protocoltest"
	"github.com/conclavehq/conclave/plugins/protocol/direct"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	protocoltest.Run(t, "direct", direct.New())
}

func FuzzScore(f *testing.F) {
	protocoltest.FuzzScore(f, "direct", direct.New())
}
