package pairwise_test

import (
	"testing"

	"github.com/conclavehq/conclave/core/protocoltest"
	"github.com/conclavehq/conclave/plugins/protocol/pairwise"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	protocoltest.Run(t, "pairwise", pairwise.New())
}

func FuzzScore(f *testing.F) {
	protocoltest.FuzzScore(f, "pairwise", pairwise.New())
}
