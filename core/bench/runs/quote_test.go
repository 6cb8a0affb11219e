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
