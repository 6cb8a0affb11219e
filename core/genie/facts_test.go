package genie

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core/bench"
	"github.com/conclavehq/conclave/core/bench/runs"
)

// The interval of n questions narrows as 1/√n: 40 questions of half-width
// 0.10 reach 0.05 at 160, so 120 more; one that is narrow enough needs
// none; an undefined interval gives no figure.
func TestMoreQuestions(t *testing.T) {
	t.Parallel()
	more, ok := MoreQuestions(40, 0.45, 0.65, 0.05)
	require.True(t, ok)
	require.Equal(t, 120, more)
	more, ok = MoreQuestions(40, 0.45, 0.65, 0.07)
	require.True(t, ok)
	require.Equal(t, 42, more, "⌈40 × (0.10/0.07)²⌉ = ⌈81.63⌉ = 82")
	more, ok = MoreQuestions(40, 0.45, 0.65, 0.2)
	require.True(t, ok)
	require.Zero(t, more)
	_, ok = MoreQuestions(40, bench.Stat(math.NaN()), 0.65, 0.05)
	require.False(t, ok)
	_, ok = MoreQuestions(0, 0.45, 0.65, 0.05)
	require.False(t, ok)
}

// A complete batch's facts are its stored report's figures, per bucket and
// gate, with the narrowing computed; a batch still running has none; and
// an answer stating them passes the guard, one inventing a figure does not.
func TestFactsOfAStoredBatch(t *testing.T) {
	t.Parallel()
	rep := bench.Report{Kind: bench.KindTest, Verdict: bench.Provisional, Config: bench.DefaultConfig(), W: 0.55, Lower: 0.46,
		Upper: 0.64, N: 60, Buckets: []bench.BucketReport{{Bucket: "light", N: 20, W: 0.6, Lower: 0.45, Upper: 0.75},
			{Bucket: "hard", N: 20, W: 0.5, Lower: bench.Stat(math.NaN()), Upper: bench.Stat(math.NaN())}},
		Gates: []bench.Gate{{ID: "g1", Name: "sample", Passed: true}}}
	result, err := json.Marshal(rep)
	require.NoError(t, err)
	b := &runs.Batch{ID: "b1", Kind: runs.KindTest, Status: runs.StatusComplete, ModeVersion: 2, Billed: 4_500_000,
		Progress: runs.Progress{Total: 60, Judged: 60}, Result: result}
	f := FactsOf(b, 0.05)
	require.NotNil(t, f.Result)
	require.Equal(t, "provisional", f.Result.Verdict)
	require.InDelta(t, 0.55, *f.Result.W, 1e-9)
	require.Len(t, f.Result.Buckets, 2)
	require.Nil(t, f.Result.Buckets[1].Lower, "an undefined bound is no figure")
	require.Equal(t, []NarrowingFact{
		{Now: 0.09, HalfWidth: 0.05, More: 135},
		{Bucket: "light", Now: 0.15, HalfWidth: 0.05, More: 160},
	}, f.Result.Narrowing)
	require.Equal(t, []GateFacts{{ID: "g1", Name: "sample", Passed: true}}, f.Result.Gates)

	facts := FactValues(f)
	require.Empty(t, Check("W is 0.55 (0.46 to 0.64) over 60 questions; the light bucket needs 160 more questions "+
		"to narrow its interval to ±0.05. The run cost $4.50.", facts))
	require.Len(t, Check("W is 0.55, and 200 more questions would certify it.", facts), 1)

	running := FactsOf(&runs.Batch{ID: "b2", Kind: runs.KindTest, Status: runs.StatusRunning, Progress: runs.Progress{Total: 60, Judged: 12}}, 0.05)
	require.Nil(t, running.Result)
	require.Equal(t, 12, running.Judged)
}
