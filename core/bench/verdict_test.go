package bench_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core/bench"
)

var panel = []bench.Judge{
	{ID: "nova_pro", Family: "amazon"},
	{ID: "mistral_large", Family: "mistral"},
	{ID: "llama4_maverick", Family: "meta"},
}

// counts is, per bucket, how many questions every judgment found a mode
// win, a tie and a baseline win.
type counts [3][3]int

// agreedRun is a run on the certification panel (two repeats, swapped) in
// which every judgment of a question agrees, so that each bucket's W and
// standard error follow from counts alone.
func agreedRun(kind bench.Kind, c counts) *bench.Run {
	run := &bench.Run{Kind: kind, Protocol: bench.Pairwise, Judges: panel, Repeats: 2}
	for b, row := range c {
		for k, n := range row {
			for range n {
				i := len(run.Questions)
				run.Questions = append(run.Questions, bench.Question{Bucket: bench.Buckets[b], ModeLength: 300, BaselineLength: 300})
				for _, j := range panel {
					for r := 1; r <= 2; r++ {
						run.Judgments = append(run.Judgments, bench.Judgment{
							Question: i, Judge: j.ID, Repeat: r, ModePosition: r,
							Outcome: []bench.Outcome{bench.ModeWin, bench.Tie, bench.BaselineWin}[k],
						})
					}
				}
			}
		}
	}
	return run
}

func gateByID(t *testing.T, r *bench.Report, id string) bench.Gate {
	t.Helper()
	for _, g := range r.Gates {
		if g.ID == id {
			return g
		}
	}
	t.Fatalf("no gate %s", id)
	return bench.Gate{}
}

func score(t *testing.T, run *bench.Run) *bench.Report {
	t.Helper()
	r, err := bench.Score(run, bench.Config{})
	require.NoError(t, err)
	return r
}

// TestLadder walks the ladder on runs whose lower bound is placed on
// purpose: each case names the bound's region, and the verdict must follow
// from it (and from the gates).
func TestLadder(t *testing.T) {
	t.Parallel()
	even := counts{{20, 10, 20}, {20, 10, 20}, {20, 10, 20}}
	tests := []struct {
		name    string
		kind    bench.Kind
		c       counts
		want    bench.Verdict
		lowerIn [2]float64
	}{
		{"clearly better", bench.KindCertify, counts{{25, 20, 5}, {25, 20, 5}, {25, 20, 5}}, bench.Certified, [2]float64{0.5, 1}},
		{"just better", bench.KindCertify, counts{{24, 10, 16}, {24, 10, 16}, {24, 10, 16}}, bench.Certified, [2]float64{0.5, 0.52}},
		{"not shown better", bench.KindCertify, counts{{22, 10, 18}, {22, 10, 18}, {22, 10, 18}}, bench.Provisional, [2]float64{0.45, 0.5}},
		{"parity, judged closely", bench.KindCertify, counts{{8, 34, 8}, {8, 34, 8}, {8, 34, 8}}, bench.Provisional, [2]float64{0.45, 0.5}},
		{"parity, judged apart", bench.KindCertify, even, bench.NotCertified, [2]float64{0.4, 0.45}},
		{"possibly worse", bench.KindCertify, counts{{18, 10, 22}, {18, 10, 22}, {18, 10, 22}}, bench.NotCertified, [2]float64{0, 0.45}},
		{"test run, 60 questions", bench.KindTest, counts{{15, 5, 0}, {15, 5, 0}, {15, 5, 0}}, bench.Provisional, [2]float64{0.5, 1}},
		{"test run, 57 questions", bench.KindTest, counts{{15, 4, 0}, {15, 4, 0}, {15, 4, 0}}, bench.InsufficientSample, [2]float64{0.5, 1}},
		{"test run, a bucket of 9", bench.KindTest, counts{{25, 5, 0}, {25, 5, 0}, {8, 1, 0}}, bench.InsufficientSample, [2]float64{0.5, 1}},
		{"certify run, a bucket of 9", bench.KindCertify, counts{{25, 5, 0}, {25, 5, 0}, {8, 1, 0}}, bench.Provisional, [2]float64{0.5, 1}},
		{"one question", bench.KindCertify, counts{{1, 0, 0}}, bench.InsufficientSample, [2]float64{-1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := score(t, agreedRun(tt.kind, tt.c))
			require.Equalf(t, tt.want, r.Verdict, "%s: %s", r, r.Reason)
			if r.VerdictLower.Defined() {
				require.GreaterOrEqual(t, float64(r.VerdictLower), tt.lowerIn[0], r.String())
				require.Less(t, float64(r.VerdictLower), tt.lowerIn[1], r.String())
			}
		})
	}
}

// TestLadderTestRunNeverCertifiesSmall checks that a test run's small
// buckets hold it at provisional through gate g1, like a certification's.
func TestLadderTestRunNeverCertifiesSmall(t *testing.T) {
	t.Parallel()
	r := score(t, agreedRun(bench.KindTest, counts{{15, 5, 0}, {15, 5, 0}, {15, 5, 0}}))
	require.Equal(t, bench.Provisional, r.Verdict)
	g1 := gateByID(t, r, "g1")
	require.False(t, g1.Passed)
	require.Equal(t, bench.Check{Figure: "bucket_n", Subject: "light", Value: 20, Op: ">=", Threshold: 40}, g1.Checks[1])
}

// TestGates checks that each gate, failing alone, lowers a clear
// certification to provisional and reports the figure that failed.
func TestGates(t *testing.T) {
	t.Parallel()
	clear := counts{{25, 20, 5}, {25, 20, 5}, {25, 20, 5}}
	require.Equal(t, bench.Certified, score(t, agreedRun(bench.KindCertify, clear)).Verdict)

	t.Run("g1 valid judgments", func(t *testing.T) {
		t.Parallel()
		run := agreedRun(bench.KindCertify, clear)
		for i := range run.Judgments {
			if i%16 == 0 { // 57 of 900 missing: 93.7% valid
				run.Judgments[i].Outcome = bench.Missing
			}
		}
		r := score(t, run)
		require.Equal(t, bench.Provisional, r.Verdict)
		g := gateByID(t, r, "g1")
		require.False(t, g.Passed)
		require.Equal(t, "valid_share", g.Checks[0].Figure)
		require.InDelta(t, 843.0/900, float64(g.Checks[0].Value), 1e-12)
		require.False(t, g.Checks[0].Passed)
	})

	t.Run("g2 one judge carries the verdict", func(t *testing.T) {
		t.Parallel()
		// llama4_maverick always prefers the mode; the other two find it
		// slightly worse. W ≈ (1 + .45 + .45)/3 but .45 without llama.
		run := agreedRun(bench.KindCertify, counts{{0, 40, 10}, {0, 40, 10}, {0, 40, 10}})
		for i := range run.Judgments {
			if run.Judgments[i].Judge == "llama4_maverick" {
				run.Judgments[i].Outcome = bench.ModeWin
			}
		}
		r := score(t, run)
		require.GreaterOrEqual(t, float64(r.VerdictLower), 0.5, r.String())
		require.Equal(t, bench.Provisional, r.Verdict)
		g := gateByID(t, r, "g2")
		require.False(t, g.Passed)
		require.Len(t, g.Checks, 3)
		require.Equal(t, "llama4_maverick", g.Checks[2].Subject)
		require.InDelta(t, 0.4, float64(g.Checks[2].Value), 1e-12)
		require.False(t, g.Checks[2].Passed)
		require.True(t, g.Checks[0].Passed, "without nova_pro llama still carries it")
	})

	t.Run("g3 a bucket significantly worse", func(t *testing.T) {
		t.Parallel()
		r := score(t, agreedRun(bench.KindCertify, counts{{45, 5, 0}, {45, 5, 0}, {5, 10, 35}}))
		require.GreaterOrEqual(t, float64(r.VerdictLower), 0.5, r.String())
		require.Equal(t, bench.Provisional, r.Verdict)
		g := gateByID(t, r, "g3")
		require.False(t, g.Passed)
		require.Equal(t, "hard", g.Checks[2].Subject)
		require.Less(t, float64(g.Checks[2].Value), 0.5)
		require.True(t, g.Checks[0].Passed)
	})

	t.Run("g4 wins bought with length", func(t *testing.T) {
		t.Parallel()
		run := agreedRun(bench.KindCertify, clear)
		for i := range run.Questions {
			if i%50 < 25 { // the wins
				run.Questions[i].ModeLength = 900
			}
		}
		r := score(t, run)
		require.Equal(t, bench.Provisional, r.Verdict)
		g := gateByID(t, r, "g4")
		require.False(t, g.Passed)
		require.Greater(t, float64(g.Checks[0].Value), 0.05)
		require.InDelta(t, float64(r.W-r.LengthControlledW), float64(g.Checks[0].Value), 1e-12)
	})
}

// TestAttemptAdjustment checks that a later attempt needs a wider margin:
// the critical value is t_{1−0.025/k}.
func TestAttemptAdjustment(t *testing.T) {
	t.Parallel()
	run := agreedRun(bench.KindCertify, counts{{24, 10, 16}, {24, 10, 16}, {24, 10, 16}})
	first := score(t, run)
	require.Equal(t, bench.Certified, first.Verdict)
	require.Equal(t, first.Lower, first.VerdictLower)

	run.Attempt = 5
	fifth := score(t, run)
	require.Equal(t, bench.Provisional, fifth.Verdict, fifth.Reason)
	require.Equal(t, 5, fifth.Attempt)
	require.InDelta(t, bench.TQuantile(1-0.025/5, float64(fifth.DF)), float64(fifth.CriticalValue), 1e-12)
	require.InDelta(t, float64(fifth.W-fifth.CriticalValue*fifth.SE), float64(fifth.VerdictLower), 1e-12)
	require.Equal(t, first.Lower, fifth.Lower, "the reported 95% interval does not move")
	require.Contains(t, fifth.Reason, "attempt 5")
}

func TestConfig(t *testing.T) {
	t.Parallel()
	require.Equal(t, bench.DefaultConfig(), bench.Config{}.WithDefaults())
	require.NoError(t, bench.DefaultConfig().Validate())

	stricter := bench.Config{CertifyLower: 0.52}.WithDefaults()
	require.ErrorContains(t, stricter.Validate(), "Version", "other thresholds need their own version")
	stricter.Version = "strict-1"
	require.NoError(t, stricter.Validate())

	relabelled := bench.Config{Version: bench.DefaultConfigVersion, MaxLengthDrop: 0.1}.WithDefaults()
	require.ErrorContains(t, relabelled.Validate(), "Version")

	for _, tt := range []struct {
		c     bench.Config
		field string
	}{
		{bench.Config{Version: "x", Alpha: 0.6}, "Alpha"},
		{bench.Config{Version: "x", ProvisionalLower: 0.55}, "ProvisionalLower"},
		{bench.Config{Version: "x", MinValidShare: 1.5}, "MinValidShare"},
		{bench.Config{Version: "x", MinBucketQuestions: 1}, "MinBucketQuestions"},
		{bench.Config{Version: "x", MaxLengthDrop: -0.1}, "MaxLengthDrop"},
	} {
		require.ErrorContains(t, tt.c.WithDefaults().Validate(), tt.field)
		_, err := bench.Score(handRun(), tt.c)
		require.ErrorContains(t, err, tt.field)
	}
}
