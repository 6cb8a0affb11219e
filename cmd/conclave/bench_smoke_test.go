package main

import (
	"testing"

	"github.com/conclavehq/conclave/core/benchtest"
)

// The smoke forms of this package's benchmarks (core/benchtest): each runs
// alone, once, at its smoke sizes, so that a change that breaks one fails
// make test. No figure is asserted.

func TestCertificationSmoke(t *testing.T) {
	t.Parallel()
	benchtest.Smoke(t, "BenchmarkCertification")
}

func TestServeOverheadSmoke(t *testing.T) {
	t.Parallel()
	benchtest.Smoke(t, "BenchmarkServeOverhead")
}

func TestServeOverheadFloorSmoke(t *testing.T) {
	t.Parallel()
	benchtest.Smoke(t, "BenchmarkServeOverheadFloor")
}

func TestServeOverheadLeanRailsSmoke(t *testing.T) {
	t.Parallel()
	benchtest.Smoke(t, "BenchmarkServeOverheadLeanRails")
}

func TestChatInFlightSmoke(t *testing.T) {
	t.Parallel()
	benchtest.Smoke(t, "BenchmarkChatInFlight")
}
