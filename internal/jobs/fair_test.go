package jobs

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core/bench/runs"
)

// Fair sharing of the bench workers between organisations: the order River
// fetches question jobs in hands them out one organisation after another.

// fetchOrder names the question jobs waiting on the bench queue in the
// order River fetches them (priority, scheduled_at, id), each as its
// batch's label in names and its index: "A0", "B1".
func (b *benchBundle) fetchOrder(t *testing.T, names map[string]string) []string {
	t.Helper()
	rows, err := b.pool.Query(b.ctx, `SELECT args->>'batch_id', (args->>'index')::int FROM river_job
		WHERE queue = $1 AND state = 'available' ORDER BY priority, scheduled_at, id`, BenchQueue)
	require.NoError(t, err)
	var out []string
	for rows.Next() {
		var batch string
		var index int
		require.NoError(t, rows.Scan(&batch, &index))
		out = append(out, fmt.Sprintf("%s%d", names[batch], index))
	}
	require.NoError(t, rows.Err())
	return out
}

// take marks the question jobs of labels running, as River's fetch would.
func (b *benchBundle) take(t *testing.T, names map[string]string, labels ...string) {
	t.Helper()
	for _, l := range labels {
		var batch string
		for id, name := range names {
			if name == l[:1] {
				batch = id
			}
		}
		tag, err := b.pool.Exec(b.ctx, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now()
			WHERE kind = 'bench_question' AND args->>'batch_id' = $1 AND args->>'index' = $2`, batch, l[1:])
		require.NoError(t, err)
		require.EqualValues(t, 1, tag.RowsAffected(), l)
	}
}

// Org A launches a large batch first and org B a small one after it; with
// one worker, B's questions are worked one after each of A's, so B's batch
// finishes while A's has done only as many questions as B's — not after
// all of A's, as first-in first-out would have it.
func TestTwoOrganisationsLaunchingAtOnceBothProgress(t *testing.T) {
	t.Parallel()
	b := setupBench(t)
	orgA, orgB := b.org(t, "Acme", 0), b.org(t, "Beta", 0)
	idA, idB := newBatchID(), newBatchID()
	// A's progress and B's, read from the store when B's last question
	// starts: the one worker is then on it, so nothing else is running.
	var mu sync.Mutex
	var seenA, seenB *runs.Progress
	b.mode.fail = func(r *runs.AnswerRequest) error {
		if r.Batch.ID == idB && r.Question.Index == 2 {
			a, ab := b.batch(t, idA), b.batch(t, idB)
			mu.Lock()
			seenA, seenB = &a.Progress, &ab.Progress
			mu.Unlock()
		}
		return nil
	}
	b.launchID(t, idA, orgA, runs.KindTest, 12, 1, runs.JudgeNovaPro)
	b.launchID(t, idB, orgB, runs.KindTest, 3, 1, runs.JudgeNovaPro)
	b.runner(t, Config{Questions: b.exec, BenchWorkers: 1})

	require.Eventually(t, func() bool {
		return b.batch(t, idA).Status == runs.StatusComplete && b.batch(t, idB).Status == runs.StatusComplete
	}, time.Minute, 50*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.NotNil(t, seenA, "B's last question ran")
	require.Equal(t, runs.Progress{Total: 3, Answered: 2, Judged: 2}, *seenB, "B's first two were worked")
	require.Equal(t, runs.Progress{Total: 12, Answered: 3, Judged: 3}, *seenA,
		"A had three questions worked, one before each of B's, when B's last started")
	require.Equal(t, runs.Progress{Total: 12, Answered: 12, Judged: 12}, b.batch(t, idA).Progress)
}

// The jobs of each launch are fetched one organisation after another: an
// organisation's k-th waiting question comes in the k-th round after the
// queue's head, another launch of an organisation with questions waiting
// follows its own, and an organisation with none waiting joins at the head.
// Every job is available at once: none is scheduled in the future.
func TestQuestionJobsInterleaveOrganisations(t *testing.T) {
	t.Parallel()
	b := setupBench(t)
	orgA, orgB, orgC := b.org(t, "Acme", 0), b.org(t, "Beta", 0), b.org(t, "Gamma", 0)
	names := map[string]string{}
	launch := func(name, org string, n int) {
		id := b.launch(t, org, runs.KindTest, n, 1, runs.JudgeNovaPro)
		names[id] = name
	}
	launch("A", orgA, 4)
	launch("B", orgB, 2)
	launch("D", orgA, 2) // A's second batch
	require.Equal(t, []string{"A0", "B0", "A1", "B1", "A2", "A3", "D0", "D1"}, b.fetchOrder(t, names))

	b.take(t, names, "A0", "B0")
	launch("C", orgC, 3)
	require.Equal(t, []string{"A1", "B1", "C0", "A2", "C1", "A3", "C2", "D0", "D1"}, b.fetchOrder(t, names))

	var scheduled, future int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FILTER (WHERE state = 'scheduled'),
		count(*) FILTER (WHERE scheduled_at > now()) FROM river_job WHERE queue = $1`, BenchQueue).Scan(&scheduled, &future))
	require.Zero(t, scheduled, "every question job is available")
	require.Zero(t, future, "none is scheduled in the future")
}

// Two organisations enqueuing in parallel transactions, neither seeing the
// other's jobs, still take turns: each starts at the queue's head.
func TestParallelLaunchesTakeTurns(t *testing.T) {
	t.Parallel()
	b := setupBench(t)
	q, err := NewQuestionQueue(b.pool, 0)
	require.NoError(t, err)
	a, bb, c := newBatchID(), newBatchID(), newBatchID()
	names := map[string]string{a: "A", bb: "B", c: "C"}
	require.NoError(t, pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
		return q.EnqueueQuestions(b.ctx, tx, "org-a", a, 3)
	}))
	tx1, err := b.pool.Begin(b.ctx)
	require.NoError(t, err)
	defer func() { _ = tx1.Rollback(b.ctx) }()
	tx2, err := b.pool.Begin(b.ctx)
	require.NoError(t, err)
	defer func() { _ = tx2.Rollback(b.ctx) }()
	require.NoError(t, q.EnqueueQuestions(b.ctx, tx1, "org-b", bb, 2))
	require.NoError(t, q.EnqueueQuestions(b.ctx, tx2, "org-c", c, 2))
	require.NoError(t, tx2.Commit(b.ctx))
	require.NoError(t, tx1.Commit(b.ctx))
	order := b.fetchOrder(t, names)
	require.Len(t, order, 7)
	require.Equal(t, "A0", order[0])
	require.ElementsMatch(t, []string{"B0", "C0"}, order[1:3])
	require.Equal(t, "A1", order[3])
	require.ElementsMatch(t, []string{"B1", "C1"}, order[4:6])
	require.Equal(t, "A2", order[6])
}

// The slots of a launch: on an idle queue fairHorizon back; after the
// organisation's own last waiting question, else at the queue's head; one
// slotSpacing apart and never after now.
func TestFairSlots(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { v := now.Add(d); return &v }
	us := time.Microsecond
	for _, c := range []struct {
		name       string
		head, last *time.Time
		want       []time.Time
	}{
		{"an idle queue", nil, nil, []time.Time{*at(-fairHorizon), *at(-fairHorizon + us)}},
		{"at the head", at(-time.Hour), nil, []time.Time{*at(-time.Hour), *at(-time.Hour + us)}},
		{"after its own", at(-time.Hour), at(-time.Hour + 5*us), []time.Time{*at(-time.Hour + 6*us), *at(-time.Hour + 7*us)}},
		{"a recent head is an idle grid", at(-time.Second), nil, []time.Time{*at(-fairHorizon), *at(-fairHorizon + us)}},
		{"never after now", at(-time.Hour), at(-us), []time.Time{now, now}},
	} {
		require.Equal(t, c.want, fairSlots(c.head, c.last, now, 2), c.name)
	}
}
