package api_test

import (
	"testing"

	"github.com/conclavehq/conclave/core/benchtest"
)

// The smoke forms of this package's benchmarks (core/benchtest): each runs
// alone, once, at its smoke sizes, so that a change that breaks one fails
// make test. No figure is asserted.

func TestAuthenticatedRequestSmoke(t *testing.T) {
	t.Parallel()
	benchtest.Smoke(t, "BenchmarkAuthenticatedRequest")
}

func TestEstimateSmoke(t *testing.T) {
	t.Parallel()
	benchtest.Smoke(t, "BenchmarkEstimate")
}

func TestGatewayOverheadSmoke(t *testing.T) {
	t.Parallel()
	benchtest.Smoke(t, "BenchmarkGatewayOverhead")
}

func TestChatCPUSmoke(t *testing.T) {
	t.Parallel()
	benchtest.Smoke(t, "BenchmarkChatCPU")
}

func TestTracingCostSmoke(t *testing.T) {
	t.Parallel()
	benchtest.Smoke(t, "BenchmarkTracingCost")
}
