package benchsim

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/conclavehq/conclave/core/bench"
)

// Calibration is what many simulated runs of one truth came to under
// bench.Score. Rates are shares of Runs.
type Calibration struct {
	Truth Truth
	Runs  int
	// Verdicts counts the runs by verdict.
	Verdicts map[bench.Verdict]int
	// LowerAbove is the share of runs whose verdict bound reached
	// CertifyLower: how often the interval alone would have certified,
	// before the gates.
	LowerAbove float64
	// Coverage is the share of runs whose 95% interval held the true W;
	// NaiveCoverage the same for the naive (per-judgment) interval.
	Coverage      float64
	NaiveCoverage float64
	// NaiveLowerAbove is the share of runs whose naive lower bound reached
	// CertifyLower: how often the naive interval would have certified.
	NaiveLowerAbove float64
	// MeanHalfWidth is the mean of (Upper − Lower)/2; MeanRho the mean of
	// the runs' ρ̂; MeanW the mean of their W.
	MeanHalfWidth float64
	MeanRho       float64
	MeanW         float64
}

// Rate is the share of runs with verdict v.
func (c *Calibration) Rate(v bench.Verdict) float64 {
	return float64(c.Verdicts[v]) / float64(c.Runs)
}

// MCError is the Monte Carlo standard error of a rate p measured over the
// calibration's runs, √(p(1−p)/runs).
func (c *Calibration) MCError(p float64) float64 {
	return math.Sqrt(p * (1 - p) / float64(c.Runs))
}

// Calibrate draws runs from cfg's truth and scores each under score. Run k
// draws from its own PCG stream (seed, k), so the result depends only on
// the arguments.
func Calibrate(cfg Config, score bench.Config, runs int, seed uint64) (*Calibration, error) {
	if runs < 1 {
		return nil, fmt.Errorf("benchsim: runs: %d is less than 1", runs)
	}
	sim, err := New(cfg)
	if err != nil {
		return nil, err
	}
	score = score.WithDefaults()
	truth := sim.Truth()
	c := &Calibration{Truth: truth, Runs: runs, Verdicts: make(map[bench.Verdict]int)}
	var above, covered, naiveCovered, naiveAbove int
	var halfWidth, rho, w float64
	for k := range runs {
		run := sim.Run(rand.New(rand.NewPCG(seed, uint64(k))))
		r, err := bench.Score(run, score)
		if err != nil {
			return nil, fmt.Errorf("benchsim: scoring run %d: %w", k, err)
		}
		c.Verdicts[r.Verdict]++
		if float64(r.VerdictLower) >= score.CertifyLower {
			above++
		}
		if float64(r.Lower) <= truth.W && truth.W <= float64(r.Upper) {
			covered++
		}
		if float64(r.NaiveLower) <= truth.W && truth.W <= float64(r.NaiveUpper) {
			naiveCovered++
		}
		if float64(r.NaiveLower) >= score.CertifyLower {
			naiveAbove++
		}
		halfWidth += float64(r.Upper-r.Lower) / 2
		rho += float64(r.Rho)
		w += float64(r.W)
	}
	n := float64(runs)
	c.LowerAbove = float64(above) / n
	c.Coverage = float64(covered) / n
	c.NaiveCoverage = float64(naiveCovered) / n
	c.NaiveLowerAbove = float64(naiveAbove) / n
	c.MeanHalfWidth = halfWidth / n
	c.MeanRho = rho / n
	c.MeanW = w / n
	return c, nil
}
