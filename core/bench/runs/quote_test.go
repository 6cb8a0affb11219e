package runs_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core/bench/runs"
)

// A launch's estimate is the questions ahead of it and its own, worked
// Workers at a time in waves of about QuestionTime each, rounded up to a
// whole minute; the zero pace is the spec's question a minute.
func TestPaceEstimatesWavesOfWorkers(t *testing.T) {
	t.Parallel()
	minute := runs.Pace{Workers: 32, QuestionTime: time.Minute}
	for _, c := range []struct {
		pace         runs.Pace
		ahead, total int
		want         int
	}{
		{minute, 0, 150, 5},  // a certification alone: 5 waves of 32
		{minute, 0, 1, 1},    // never under a minute
		{minute, 0, 32, 1},   // one full wave
		{minute, 0, 33, 2},   // a wave and one
		{minute, 40, 150, 6}, // behind 40 queued questions: 190 in 6 waves
		{minute, -3, 32, 1},  // a negative count is none
		{runs.Pace{Workers: 16, QuestionTime: 45 * time.Second}, 0, 150, 8}, // 10 waves × 45 s = 7.5 min
		{runs.Pace{}, 0, 150, 150}, // the spec's pace
	} {
		require.Equal(t, c.want, c.pace.Minutes(c.ahead, c.total), "%+v ahead %d total %d", c.pace, c.ahead, c.total)
	}
}

// With the workers shared fairly, a launch waits for its organisation's
// own questions and, of every other organisation's, only as many as the
// rounds up to its own last question: a small launch behind another
// organisation's large batch is not estimated behind all of it.
func TestFairShareCountsOnlyTheTurnsAhead(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		waiting runs.Waiting
		total   int
		want    int
	}{
		{"an idle queue", nil, 150, 0},
		{"only its own", runs.Waiting{"org_o": 40}, 10, 40},
		{"behind a large batch", runs.Waiting{"org_a": 6000}, 10, 10},
		{"behind a small one", runs.Waiting{"org_a": 3}, 10, 3},
		{"its own and two others", runs.Waiting{"org_o": 5, "org_a": 6000, "org_b": 12}, 10, 5 + 15 + 12},
		{"an empty count", runs.Waiting{"org_a": 0, "org_b": -2}, 10, 0},
	} {
		require.Equal(t, c.want, c.waiting.Ahead("org_o", c.total), c.name)
	}
	// The estimate of a certification launched behind another
	// organisation's 6,000 questions: its 150 and 150 of theirs, in waves
	// of 32 a minute, not 6,150 questions' worth.
	pace := runs.Pace{Workers: 32, QuestionTime: time.Minute}
	require.Equal(t, 10, pace.Minutes(runs.Waiting{"org_a": 6000}.Ahead("org_o", 150), 150))
}
