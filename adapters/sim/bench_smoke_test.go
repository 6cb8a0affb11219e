package sim

import (
	"testing"

	"github.com/conclavehq/conclave/core/benchtest"
)

// The smoke forms of this package's benchmarks (core/benchtest): each runs
// alone, once, at its smoke sizes, so that a change that breaks one fails
// make test. No figure is asserted. (BenchmarkFitSeedProfile is the tool that
// refits the seed profile, built only with the simfit tag: not a benchmark.)

func TestSeedCalibrationSmoke(t *testing.T) {
	t.Parallel()
	benchtest.Smoke(t, "BenchmarkSeedCalibration")
}
