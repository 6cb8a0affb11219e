package benchsim_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core/bench"
	"github.com/conclavehq/conclave/core/bench/benchsim"
)

func rng(seed, stream uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, stream)) }

func newSim(t *testing.T, cfg benchsim.Config) *benchsim.Sim {
	t.Helper()
	s, err := benchsim.New(cfg)
	require.NoError(t, err)
	return s
}

// TestRunIsACertification checks the shape of a drawn run: 150 questions
// 50/50/50, three judges of three families, two repeats with the order
// swapped on the second, and judgments missing at about the set rate.
func TestRunIsACertification(t *testing.T) {
	t.Parallel()
	s := newSim(t, benchsim.Config{MissingRate: 0.05})
	run := s.Run(rng(1, 0))
	require.Equal(t, bench.KindCertify, run.Kind)
	require.Equal(t, bench.Pairwise, run.Protocol)
	require.Len(t, run.Questions, 150)
	require.Len(t, run.Judgments, 900)
	require.Equal(t, 2, run.Repeats)
	families := map[string]bool{}
	for _, j := range run.Judges {
		families[j.Family] = true
	}
	require.Len(t, families, 3)
	perBucket := map[bench.Bucket]int{}
	for _, q := range run.Questions {
		perBucket[q.Bucket]++
		require.Positive(t, q.ModeLength)
		require.Positive(t, q.BaselineLength)
	}
	require.Equal(t, map[bench.Bucket]int{bench.BucketLight: 50, bench.BucketMedium: 50, bench.BucketHard: 50}, perBucket)

	type slot struct {
		question int
		judge    string
		repeat   int
	}
	pos := map[slot]int{}
	var first, missing int
	for _, j := range run.Judgments {
		pos[slot{j.Question, j.Judge, j.Repeat}] = j.ModePosition
		if j.Repeat == 1 && j.ModePosition == 1 {
			first++
		}
		if j.Outcome == bench.Missing {
			missing++
		}
	}
	for k, p := range pos {
		if k.repeat == 1 {
			require.Equal(t, 3-p, pos[slot{k.question, k.judge, 2}], "repeat 2 swaps repeat 1")
		}
	}
	require.InDelta(t, 225, first, 45, "repeat 1 in a random order")
	require.InDelta(t, 45, missing, 25)

	r, err := bench.Score(run, bench.Config{})
	require.NoError(t, err)
	require.Equal(t, 150, r.N)
}

// TestRunIsDeterministic checks that a run depends only on its seed.
func TestRunIsDeterministic(t *testing.T) {
	t.Parallel()
	s := newSim(t, benchsim.Config{W: 0.55, TieWidth: 0.2, VerifiableShare: 0.5})
	require.Equal(t, s.Run(rng(7, 3)), s.Run(rng(7, 3)))
	require.NotEqual(t, s.Run(rng(7, 3)), s.Run(rng(7, 4)))
}

// TestTruthIsWhatRunsEstimate checks the solved model against the runs it
// draws: with biased, noisy judges, ties and missing judgments, the mean W
// of many runs is the true W and their mean ρ̂ the true ρ.
func TestTruthIsWhatRunsEstimate(t *testing.T) {
	t.Parallel()
	judges := benchsim.CertifyJudges()
	judges[0].Noise, judges[0].Leniency = 1.3, 0.2
	judges[2].Noise = 0.8
	for _, tt := range []struct{ w, rho float64 }{{0.5, 0.3}, {0.62, 0.6}} {
		s := newSim(t, benchsim.Config{
			W: tt.w, Rho: tt.rho, Judges: judges, TieWidth: 0.3, PositionBias: 0.4,
			SelfPreference: 0.3, ModeFamilies: []string{"meta"}, MissingRate: 0.03,
		})
		var w, rho float64
		const runs = 300
		for k := range runs {
			r, err := bench.Score(s.Run(rng(11, uint64(k))), bench.Config{})
			require.NoError(t, err)
			w += float64(r.W) / runs
			rho += float64(r.Rho) / runs
		}
		// One run's W has a standard error near 0.03, so the mean of 300
		// is within 0.006 at three standard errors.
		require.InDelta(t, tt.w, w, 0.006, "W")
		require.InDelta(t, tt.rho, rho, 0.02, "ρ")
	}
}

// TestTemplatesNeedClustering checks the simulator's shared templates and
// the reason to cluster by them: when the two items of a template share
// their effect, the interval clustered by template keeps its coverage and
// the interval clustered by question loses it.
func TestTemplatesNeedClustering(t *testing.T) {
	t.Parallel()
	s := newSim(t, benchsim.Config{Rho: 0.5, TemplateShare: 0.6})
	const runs = 1000
	var byTemplate, byQuestion float64
	for k := range runs {
		run := s.Run(rng(3, uint64(k)))
		require.Equal(t, run.Questions[0].Template, run.Questions[1].Template)
		require.NotEqual(t, run.Questions[1].Template, run.Questions[2].Template)
		r, err := bench.Score(run, bench.Config{})
		require.NoError(t, err)
		require.Equal(t, 75, r.Clusters)
		if r.Lower <= 0.5 && 0.5 <= r.Upper {
			byTemplate++
		}
		for i := range run.Questions {
			run.Questions[i].Template = ""
		}
		r, err = bench.Score(run, bench.Config{})
		require.NoError(t, err)
		if r.Lower <= 0.5 && 0.5 <= r.Upper {
			byQuestion++
		}
	}
	require.InDelta(t, 0.95, byTemplate/runs, 0.02, "clustered by template")
	require.Less(t, byQuestion/runs, 0.91, "clustered by question")
}

// TestLengthControl checks the length-controlled W against the truth: when
// judges favour longer answers and the mode's are longer, the
// length-controlled W of a run estimates the win rate at equal lengths, and
// gate g4 fails about half the time when that is exactly five points below W.
func TestLengthControl(t *testing.T) {
	t.Parallel()
	s := newSim(t, benchsim.Config{W: 0.6, Rho: 0.5, LengthBias: 0.6, LengthLogRatio: 0.4, LengthSpread: 0.4})
	truth := s.Truth()
	require.InDelta(t, 0.55, truth.LengthControlledW, 0.01)
	const runs = 300
	var lc, g4 float64
	for k := range runs {
		r, err := bench.Score(s.Run(rng(4, uint64(k))), bench.Config{})
		require.NoError(t, err)
		lc += float64(r.LengthControlledW) / runs
		if !r.Gates[3].Passed {
			g4++
		}
	}
	require.InDelta(t, truth.LengthControlledW, lc, 0.008)
	require.InDelta(t, 0.5, g4/runs, 0.12)
}

// TestVerifiableCoverage checks the interval of the paired accuracy
// difference against the simulated truth.
func TestVerifiableCoverage(t *testing.T) {
	t.Parallel()
	s := newSim(t, benchsim.Config{VerifiableShare: 0.4, AccuracyLift: 0.1})
	truth := s.Truth().AccuracyDifference
	require.InDelta(t, 0.1, truth, 1e-12)
	const runs = 600
	var covered float64
	for k := range runs {
		r, err := bench.Score(s.Run(rng(5, uint64(k))), bench.Config{})
		require.NoError(t, err)
		require.NotNil(t, r.Verifiable)
		if float64(r.Verifiable.Lower) <= truth && truth <= float64(r.Verifiable.Upper) {
			covered++
		}
	}
	require.InDelta(t, 0.95, covered/runs, 0.03)
}

// TestSelfPreferenceTripsGateG2 checks that a judge who favours the mode's
// family and carries the verdict is caught by gate g2.
func TestSelfPreferenceTripsGateG2(t *testing.T) {
	t.Parallel()
	s := newSim(t, benchsim.Config{W: 0.56, SelfPreference: 1, ModeFamilies: []string{"meta"}})
	const runs = 200
	var tripped float64
	for k := range runs {
		r, err := bench.Score(s.Run(rng(6, uint64(k))), bench.Config{})
		require.NoError(t, err)
		require.Greater(t, float64(r.Judges[2].W), float64(r.Judges[0].W), "llama4_maverick favours its own family")
		if !r.Gates[1].Passed {
			tripped++
			require.NotEqual(t, bench.Certified, r.Verdict)
		}
	}
	require.Greater(t, tripped/runs, 0.4)
}

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		cfg   benchsim.Config
		field string
	}{
		{benchsim.Config{W: 1}, "W"},
		{benchsim.Config{Rho: 1.2}, "Rho"},
		{benchsim.Config{MissingRate: 1}, "MissingRate"},
		{benchsim.Config{TemplateShare: -0.1}, "TemplateShare"},
		{benchsim.Config{Kind: "bake"}, "Kind"},
		{benchsim.Config{Rho: 0.1, LengthBias: 3, LengthSpread: 1}, "LengthBias"},
	} {
		_, err := benchsim.New(tt.cfg)
		require.ErrorContains(t, err, tt.field)
	}
}

// TestPluralityVotes checks the plurality simulation: every judgment is a
// vote for the mode's or the baseline's position (none when missing), never
// a tie, and the runs' W is unbiased for the truth at parity and at
// W = 0.60 — within four Monte Carlo standard errors over 300 runs.
func TestPluralityVotes(t *testing.T) {
	t.Parallel()
	run := newSim(t, benchsim.Config{Protocol: bench.Plurality, MissingRate: 0.05}).Run(rng(7, 0))
	require.Equal(t, bench.Plurality, run.Protocol)
	require.Equal(t, 2, run.Answers)
	var missing int
	for _, j := range run.Judgments {
		require.Equal(t, 3, j.ModePosition+j.BaselinePosition, "two answers in two positions")
		require.Empty(t, j.Outcome)
		if j.Vote == 0 {
			missing++
			continue
		}
		require.Contains(t, []int{j.ModePosition, j.BaselinePosition}, j.Vote)
	}
	require.InDelta(t, 0.05*900, missing, 25)

	for _, w := range []float64{0.5, 0.6} {
		const runs = 300
		c, err := benchsim.Calibrate(benchsim.Config{Protocol: bench.Plurality, W: w, Rho: 0.5, PositionBias: 0.3},
			bench.Config{}, runs, 11)
		require.NoError(t, err)
		// The interval's half-width is about 1.96 standard errors of one
		// run's W; its mean over runs has that error over √runs.
		se := c.MeanHalfWidth / 1.96 / math.Sqrt(runs)
		t.Logf("W=%v: mean W %.4f ± %.4f, mean ρ̂ %.3f", w, c.MeanW, se, c.MeanRho)
		require.InDelta(t, w, c.MeanW, 4*se, "W=%v: mean %v, Monte Carlo error %v", w, c.MeanW, se)
		require.InDelta(t, 0.5, c.MeanRho, 0.05, "W=%v", w)
	}

	_, err := benchsim.New(benchsim.Config{Protocol: bench.Plurality, TieWidth: 0.3})
	require.ErrorContains(t, err, "never ties")
}
