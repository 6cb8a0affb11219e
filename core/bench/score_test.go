package bench_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core/bench"
)

var (
	judgeA = bench.Judge{ID: "a", Family: "fa"}
	judgeB = bench.Judge{ID: "b", Family: "fb"}
)

// handRun is six questions, two per bucket, judged by a and b twice each
// (the mode first in repeat 1, second in repeat 2). Each row is one
// question's outcomes: a's repeat 1 and 2, then b's.
func handRun() *bench.Run {
	W, T, L := bench.ModeWin, bench.Tie, bench.BaselineWin
	rows := [][4]bench.Outcome{
		{W, W, W, W}, // ȳ = 1
		{W, L, T, T}, // ȳ = 0.5
		{W, W, T, T}, // ȳ = 0.75
		{L, L, T, T}, // ȳ = 0.25
		{W, W, W, W}, // ȳ = 1
		{L, L, L, L}, // ȳ = 0
	}
	run := &bench.Run{
		Kind: bench.KindCertify, Protocol: bench.Pairwise,
		Judges: []bench.Judge{judgeA, judgeB}, Repeats: 2,
		Provenance: bench.Provenance{BaselineID: "sim/atlas", JudgePromptVersion: "judge-v1", QuestionSeed: "42", BankVersion: "bank-v1"},
	}
	for i, row := range rows {
		q := bench.Question{Bucket: bench.Buckets[i/2], ModeLength: 99, BaselineLength: 99}
		if i%2 == 0 {
			q.ModeLength = 199 // ln(200/100) = ln 2 on the first of each bucket
		}
		run.Questions = append(run.Questions, q)
		for k, o := range row {
			judge := []string{"a", "b"}[k/2]
			run.Judgments = append(run.Judgments, bench.Judgment{Question: i, Judge: judge, Repeat: k%2 + 1, ModePosition: k%2 + 1, Outcome: o})
		}
	}
	// Verifiable items: q0 mode right only, q2 both, q4 mode only, q5 the
	// baseline only.
	for i, c := range map[int][2]bool{0: {true, false}, 2: {true, true}, 4: {true, false}, 5: {false, true}} {
		run.Questions[i].Verifiable = true
		run.Questions[i].ModeCorrect, run.Questions[i].BaselineCorrect = c[0], c[1]
	}
	return run
}

// TestScoreByHand checks every figure of a small run against its value
// worked out by hand from the formulas of docs/certify.md.
func TestScoreByHand(t *testing.T) {
	t.Parallel()
	r, err := bench.Score(handRun(), bench.Config{})
	require.NoError(t, err)
	near := func(want float64, got bench.Stat, what string) {
		t.Helper()
		require.InDeltaf(t, want, float64(got), 1e-9, "%s", what)
	}

	// ȳ = 1, .5 | .75, .25 | 1, 0; bucket means .75, .5, .5.
	near(3.5/6, r.W, "W")
	// Residuals ±.25, ±.25, ±.5: Σe² = .75; CR1 c = G/(G−1)·(n−1)/(n−B) = 6/5·5/3 = 2;
	// SE = √(2·.75)/6. The textbook stratified form agrees: Σ_b (1/3)²·s_b²/2
	// with s_b² = .125, .125, .5.
	se := math.Sqrt(1.5) / 6
	near(se, r.SE, "SE")
	require.Equal(t, 3, r.DF, "DF = clusters − buckets")
	t3 := 3.182446305284263 // t_{0.975, 3}
	near(3.5/6-t3*se, r.Lower, "Lower")
	near(3.5/6+t3*se, r.Upper, "Upper")
	require.Equal(t, 6, r.N)
	require.Equal(t, 6, r.Clusters)
	require.Equal(t, 24, r.JudgmentsPlanned)
	require.Equal(t, 24, r.JudgmentsValid)
	near(4, r.JudgmentsPerQuestion, "judgments per question")

	// ANOVA within buckets: SSB = 4·.75 = 3 on 3 df, SSW = 1 on 18, m₀ = 4.
	near((1-1.0/18)/(1+3.0/18), r.Rho, "ρ̂")
	// 24 scores summing to 14 with squares summing to 12.5.
	naive := math.Sqrt((12.5 - 14.0*14.0/24) / 23 / 24)
	near(naive, r.NaiveSE, "naive SE")
	near((se/naive)*(se/naive), r.DesignEffect, "design effect")
	near(24/((se/naive)*(se/naive)), r.EffectiveSampleSize, "effective sample size")
	near(3.5/6-bench.TQuantile(0.975, 23)*naive, r.NaiveLower, "naive lower")

	require.Len(t, r.Buckets, 3)
	require.Equal(t, bench.BucketLight, r.Buckets[0].Bucket)
	require.Equal(t, 2, r.Buckets[0].N)
	near(0.75, r.Buckets[0].W, "W light")
	near(0.25, r.Buckets[0].SE, "SE light") // s² = .125 over 2
	near(0.75-12.706204736174704*0.25, r.Buckets[0].Lower, "lower light")
	near(0.5, r.Buckets[2].W, "W hard")
	near(0.5, r.Buckets[2].SE, "SE hard")

	require.Len(t, r.Judges, 2)
	for _, j := range r.Judges {
		require.Equal(t, 12, j.Valid)
		near(3.5/6, j.W, "W of "+j.Judge)
		near(3.5/6, j.WWithout, "W without "+j.Judge)
	}
	near(5.0/6, r.Judges[0].PositionConsistency, "a: q1 went W then L")
	near(1, r.Judges[1].PositionConsistency, "b")
	require.Equal(t, 12, r.PositionPairs)
	near(11.0/12, r.PositionConsistency, "position consistency")

	// Subjects (question, repeat): 6 of 12 agree; category shares 11, 6, 7 of 24.
	pe := (11.0*11 + 6*6 + 7*7) / (24.0 * 24)
	near((0.5-pe)/(1-pe), r.FleissKappa, "Fleiss' κ")
	near(6.0/24, r.TieRate, "tie rate")
	near(0, r.MissingRate, "missing rate")

	// Log ratio ln 2 on the first of each bucket, 0 on the second: within
	// buckets x = ±ln2/2, so β = Σxy/Σx² = 1/(1.5·ln 2) and W_LC = W − β·ln2/2 = W − 1/3.
	near(149, r.MeanModeLength, "mean mode length")
	near(99, r.MeanBaselineLength, "mean baseline length")
	near(1/(1.5*math.Ln2), r.LengthSlope, "length slope")
	near(3.5/6-1.0/3, r.LengthControlledW, "length-controlled W")

	// Differences 1 | 0 | 1, −1: mean .25; residuals 0, 0, 1, −1; c = 4/3·3/1.
	require.NotNil(t, r.Verifiable)
	require.Equal(t, 4, r.Verifiable.N)
	near(0.75, r.Verifiable.ModeAccuracy, "mode accuracy")
	near(0.5, r.Verifiable.BaselineAccuracy, "baseline accuracy")
	near(0.25, r.Verifiable.Difference, "difference")
	near(math.Sqrt(8)/4, r.Verifiable.SE, "difference SE")
	near(0.25-12.706204736174704*math.Sqrt(8)/4, r.Verifiable.Lower, "difference lower")

	require.Equal(t, bench.NotCertified, r.Verdict, r.Reason)
	require.Equal(t, 1, r.Attempt)
	near(t3, r.CriticalValue, "critical value")
	require.Equal(t, r.Lower, r.VerdictLower)
	require.Equal(t, "sim/atlas", r.Provenance.BaselineID)
	require.Equal(t, bench.DefaultConfig(), r.Config)
}

// TestScoreClustersByTemplate checks that questions drawn from one template
// are one cluster: two templates of two light questions each, scored 1, 1
// and 0, 0.
func TestScoreClustersByTemplate(t *testing.T) {
	t.Parallel()
	run := &bench.Run{Kind: bench.KindCertify, Protocol: bench.Pairwise, Judges: []bench.Judge{judgeA}, Repeats: 1}
	for i, o := range []bench.Outcome{bench.ModeWin, bench.ModeWin, bench.BaselineWin, bench.BaselineWin} {
		run.Questions = append(run.Questions, bench.Question{Bucket: bench.BucketLight, Template: []string{"t1", "t2"}[i/2]})
		run.Judgments = append(run.Judgments, bench.Judgment{Question: i, Judge: "a", Repeat: 1, ModePosition: 1, Outcome: o})
	}
	r, err := bench.Score(run, bench.Config{})
	require.NoError(t, err)
	// Cluster residuals +1, −1; c = 2/1·3/3: SE = √(2·2)/4 on 1 df.
	require.Equal(t, 2, r.Clusters)
	require.Equal(t, 1, r.DF)
	require.InDelta(t, 0.5, float64(r.SE), 1e-12)

	for i := range run.Questions {
		run.Questions[i].Template = ""
	}
	r, err = bench.Score(run, bench.Config{})
	require.NoError(t, err)
	// Four clusters, residuals ±.5: c = 4/3, SE = √(4/3)/4 on 3 df.
	require.Equal(t, 4, r.Clusters)
	require.Equal(t, 3, r.DF)
	require.InDelta(t, math.Sqrt(4.0/3)/4, float64(r.SE), 1e-12)
}

// TestScoreMissing checks that a planned judgment is missing whether it is
// recorded as missing or absent, that a question with no valid judgment is
// not scorable, and that missing judgments leave W question-weighted.
func TestScoreMissing(t *testing.T) {
	t.Parallel()
	run := handRun()
	// q0 loses b's two judgments (one recorded missing, one absent); q5 loses all four.
	var kept []bench.Judgment
	for _, j := range run.Judgments {
		switch {
		case j.Question == 0 && j.Judge == "b" && j.Repeat == 1:
			j.Outcome = bench.Missing
		case j.Question == 0 && j.Judge == "b" && j.Repeat == 2:
			continue
		case j.Question == 5:
			j.Outcome = bench.Missing
		}
		kept = append(kept, j)
	}
	run.Judgments = kept
	r, err := bench.Score(run, bench.Config{})
	require.NoError(t, err)
	require.Equal(t, 6, r.Questions)
	require.Equal(t, 5, r.N)
	require.Equal(t, 24, r.JudgmentsPlanned)
	require.Equal(t, 18, r.JudgmentsValid)
	require.InDelta(t, 6.0/24, float64(r.MissingRate), 1e-12)
	require.InDelta(t, 6.0/18, float64(r.TieRate), 1e-12)
	// ȳ = 1 (from a alone), .5, .75, .25, 1: the mean of the five.
	require.InDelta(t, 3.5/5, float64(r.W), 1e-12)
	require.Equal(t, 1, r.Buckets[2].N)
	require.False(t, r.Buckets[2].SE.Defined(), "one question in a bucket has no standard error")
	require.InDelta(t, 0.95, r.Gates[0].Checks[0].Threshold, 0)
	require.False(t, r.Gates[0].Checks[0].Passed, "18 of 24 valid is under 95%")
	require.Equal(t, 9, r.PositionPairs, "a keeps q0–q4, b q1–q4")
}

// TestScorePlurality checks the plurality mapping W = ½ + ½(share_mode −
// share_baseline): a vote for the mode scores 1, for the baseline 0, for
// another answer ½.
func TestScorePlurality(t *testing.T) {
	t.Parallel()
	run := &bench.Run{Kind: bench.KindTest, Protocol: bench.Plurality, Answers: 4, Judges: []bench.Judge{judgeA, judgeB}, Repeats: 1}
	// Mode in position 2, baseline in 3. Votes per question: a, b.
	votes := [][2]int{{2, 2}, {2, 3}, {1, 4}, {3, 3}, {2, 1}, {4, 2}}
	var mode, base float64
	for i, v := range votes {
		run.Questions = append(run.Questions, bench.Question{Bucket: bench.Buckets[i%3]})
		for k, vote := range v {
			run.Judgments = append(run.Judgments, bench.Judgment{
				Question: i, Judge: []string{"a", "b"}[k], Repeat: 1,
				ModePosition: 2, BaselinePosition: 3, Vote: vote,
			})
			mode += b2f(vote == 2)
			base += b2f(vote == 3)
		}
	}
	r, err := bench.Score(run, bench.Config{})
	require.NoError(t, err)
	require.InDelta(t, 0.5+0.5*(mode-base)/12, float64(r.W), 1e-12)
	require.InDelta(t, 4.0/12, float64(r.TieRate), 1e-12, "votes for neither")
	require.Equal(t, bench.InsufficientSample, r.Verdict)

	run.Judgments[0].Outcome = bench.BaselineWin
	_, err = bench.Score(run, bench.Config{})
	require.ErrorIs(t, err, bench.ErrInvalidRun, "an outcome that disagrees with the vote")
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// TestScoreRefusesInconsistentRuns checks that data that do not hold
// together are refused, naming what is wrong.
func TestScoreRefusesInconsistentRuns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(*bench.Run)
		field  string
	}{
		{"unknown kind", func(r *bench.Run) { r.Kind = "bake" }, "kind"},
		{"unknown protocol", func(r *bench.Run) { r.Protocol = "vote" }, "protocol"},
		{"no judges", func(r *bench.Run) { r.Judges = nil }, "judges"},
		{"a judge twice", func(r *bench.Run) { r.Judges = append(r.Judges, judgeA) }, "judges[2].id"},
		{"no repeats", func(r *bench.Run) { r.Repeats = 0 }, "repeats"},
		{"negative attempt", func(r *bench.Run) { r.Attempt = -1 }, "attempt"},
		{"unknown bucket", func(r *bench.Run) { r.Questions[3].Bucket = "deep" }, "questions[3].bucket"},
		{"negative length", func(r *bench.Run) { r.Questions[1].BaselineLength = -1 }, "questions[1]"},
		{"question out of range", func(r *bench.Run) { r.Judgments[5].Question = 6 }, "judgments[5].question"},
		{"unknown judge", func(r *bench.Run) { r.Judgments[2].Judge = "c" }, "judgments[2].judge"},
		{"repeat out of range", func(r *bench.Run) { r.Judgments[7].Repeat = 3 }, "judgments[7].repeat"},
		{"judged twice", func(r *bench.Run) { r.Judgments[1].Repeat = 1 }, "given twice"},
		{"bad position", func(r *bench.Run) { r.Judgments[4].ModePosition = 3 }, "judgments[4].mode_position"},
		{"no outcome", func(r *bench.Run) { r.Judgments[9].Outcome = "" }, "judgments[9].outcome"},
		{"plurality outcome in a pairwise run", func(r *bench.Run) { r.Judgments[9].Outcome = bench.Neither }, "judgments[9].outcome"},
		{"plurality without answers", func(r *bench.Run) { r.Protocol = bench.Plurality }, "answers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			run := handRun()
			tt.mutate(run)
			_, err := bench.Score(run, bench.Config{})
			require.ErrorIs(t, err, bench.ErrInvalidRun)
			require.ErrorContains(t, err, tt.field)
		})
	}
}

// TestScoreEmpty checks that a run with nothing to score is reported, not
// refused: every figure undefined, the verdict insufficient_sample, and the
// report still valid JSON.
func TestScoreEmpty(t *testing.T) {
	t.Parallel()
	for _, run := range []*bench.Run{
		{Kind: bench.KindTest, Protocol: bench.Pairwise, Judges: []bench.Judge{judgeA}, Repeats: 1},
		func() *bench.Run {
			r := handRun()
			for i := range r.Judgments {
				r.Judgments[i].Outcome = bench.Missing
			}
			return r
		}(),
	} {
		r, err := bench.Score(run, bench.Config{})
		require.NoError(t, err)
		require.Equal(t, bench.InsufficientSample, r.Verdict)
		require.Equal(t, 0, r.N)
		require.False(t, r.W.Defined())
		require.False(t, r.FleissKappa.Defined())
		_, err = json.Marshal(r)
		require.NoError(t, err)
	}
}
