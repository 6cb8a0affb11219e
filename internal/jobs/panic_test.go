package jobs

import (
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core/bench/runs"
	"github.com/conclavehq/conclave/internal/logtest"
)

// A bug that panics inside a goroutine a question's job starts (an
// answerer's, a judge's) fails that attempt with an error, logged once with
// the batch and the question; the process lives on, River retries the job,
// and a question that panics on every attempt is given up like any other
// failure, so that its batch still finishes.
func TestAPanicInAQuestionFailsTheAttemptNotTheProcess(t *testing.T) {
	t.Parallel()
	b := setupBench(t)
	org := b.org(t, "Acme", 0)
	var panics atomic.Int64
	b.mode.fail = func(r *runs.AnswerRequest) error {
		if r.Question.Index == 0 {
			panics.Add(1)
			panic("a bug in an answerer")
		}
		return nil
	}
	b.panel.fail = func(r *runs.JudgeRequest) error {
		if r.Question.Index == 1 {
			panics.Add(1)
			var judged []int
			_ = judged[r.Repeat] // index out of range
		}
		return nil
	}
	logs := &logtest.Buffer{}
	exec, err := runs.NewExecutor(runs.ExecutorDeps{Store: b.batches, Mode: b.mode, Baseline: b.base, Panel: b.panel,
		Scorer: b.scorer, Certifier: b.store, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	require.NoError(t, err)
	id := b.launch(t, org, runs.KindTest, 3, 1, runs.JudgeNovaPro)

	err = exec.RunQuestion(b.ctx, id, 0)
	require.ErrorContains(t, err, "panicked: a bug in an answerer")
	require.ErrorContains(t, err, "question 0 of batch "+id)
	q, err := b.batches.Question(b.ctx, id, 0)
	require.NoError(t, err)
	require.Equal(t, runs.QuestionPending, q.State, "a failed attempt records nothing")

	b.runner(t, Config{Questions: exec, BenchWorkers: 2})
	require.Eventually(t, func() bool { return b.batch(t, id).Status.Final() }, time.Minute, 100*time.Millisecond)
	bt := b.batch(t, id)
	require.Equal(t, runs.StatusComplete, bt.Status)
	require.Equal(t, runs.Progress{Total: 3, Answered: 2, Judged: 1, Failed: 2}, bt.Progress)
	for i, why := range map[int]string{0: "panicked: a bug in an answerer", 1: "index out of range"} {
		q, err := b.batches.Question(b.ctx, id, i)
		require.NoError(t, err)
		require.Equal(t, runs.QuestionFailed, q.State, "question %d", i)
		require.Contains(t, q.Failure, why, "question %d", i)
	}

	// One error line per panic, naming the batch and the question, with
	// the stack.
	var lines []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `"level":"ERROR"`) && strings.Contains(l, "panicked") {
			lines = append(lines, l)
		}
	}
	require.Len(t, lines, int(panics.Load()), logs.String())
	for _, l := range lines {
		require.Contains(t, l, `"batch_id":"`+id+`"`)
		require.Regexp(t, `"question":[01],`, l)
		require.Contains(t, l, `"stack":"goroutine`)
	}
}
