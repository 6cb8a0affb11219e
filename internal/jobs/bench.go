package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/conclavehq/conclave/core/bench/runs"
	"github.com/conclavehq/conclave/internal/pgstore"
)

// Benchmark questions: one River job per question of a launched batch
// (core/bench/runs), inserted in the launch's own transaction
// (QuestionQueue) and worked on a queue of their own, BenchQueue, whose
// parallelism is Config.BenchWorkers — apart from the maintenance jobs,
// and apart from the organisations' concurrency slots, which only
// interactive calls take.

// BenchQueue is the River queue benchmark questions run on.
const BenchQueue = "bench"

// DefaultBenchAttempts is how many times a question's job runs before its
// question is given up on, unless NewQuestionQueue is told otherwise.
const DefaultBenchAttempts = 5

// BenchQuestionArgs is the job of one question of a batch. It is unique by
// batch and index: a question has one job, whatever inserts it again.
type BenchQuestionArgs struct {
	BatchID string `json:"batch_id" river:"unique"`
	Index   int    `json:"index" river:"unique"`
}

// Kind implements river.JobArgs.
func (BenchQuestionArgs) Kind() string { return "bench_question" }

// QuestionQueue inserts benchmark question jobs into a caller's
// transaction; it implements pgstore.QuestionQueue for pgstore.Batches. It
// only inserts (it works nothing), so any process that launches batches
// may hold one. It is safe for concurrent use.
type QuestionQueue struct {
	client   *river.Client[pgx.Tx]
	attempts int
}

// NewQuestionQueue returns a queue inserting jobs that run up to attempts
// times (0: DefaultBenchAttempts).
func NewQuestionQueue(pool *pgxpool.Pool, attempts int) (*QuestionQueue, error) {
	if attempts == 0 {
		attempts = DefaultBenchAttempts
	}
	if attempts < 1 {
		return nil, errors.New("jobs: a question's job needs at least one attempt")
	}
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	if err != nil {
		return nil, fmt.Errorf("jobs: creating the question queue's River client: %w", err)
	}
	return &QuestionQueue{client: client, attempts: attempts}, nil
}

// EnqueueQuestions implements pgstore.QuestionQueue: one job per question
// 0…count−1 of the batch, in tx.
func (q *QuestionQueue) EnqueueQuestions(ctx context.Context, tx pgx.Tx, batchID string, count int) error {
	opts := &river.InsertOpts{Queue: BenchQueue, MaxAttempts: q.attempts, UniqueOpts: river.UniqueOpts{ByArgs: true}}
	params := make([]river.InsertManyParams, count)
	for i := range params {
		params[i] = river.InsertManyParams{Args: BenchQuestionArgs{BatchID: batchID, Index: i}, InsertOpts: opts}
	}
	if _, err := q.client.InsertManyTx(ctx, tx, params); err != nil {
		return fmt.Errorf("jobs: enqueuing the questions of batch %s: %w", batchID, err)
	}
	return nil
}

// CancelQuestions implements pgstore.QuestionQueue: every job of the
// batch's questions that has not ended is cancelled in tx (River's
// JobCancelTx). One still waiting is never worked; one running has its
// context cancelled by the replica working it, told after tx commits.
func (q *QuestionQueue) CancelQuestions(ctx context.Context, tx pgx.Tx, batchID string) error {
	rows, err := tx.Query(ctx, `SELECT id FROM river_job
		WHERE kind = $1 AND args @> jsonb_build_object('batch_id', $2::text) AND finalized_at IS NULL`,
		BenchQuestionArgs{}.Kind(), batchID)
	if err != nil {
		return fmt.Errorf("jobs: finding the question jobs of batch %s: %w", batchID, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("jobs: finding the question jobs of batch %s: %w", batchID, err)
	}
	for _, id := range ids {
		if _, err := q.client.JobCancelTx(ctx, tx, id); err != nil && !errors.Is(err, river.ErrNotFound) {
			return fmt.Errorf("jobs: cancelling job %d of batch %s: %w", id, batchID, err)
		}
	}
	return nil
}

// QuestionRunner runs benchmark questions; *runs.Executor is one.
type QuestionRunner interface {
	RunQuestion(ctx context.Context, batchID string, index int) error
	AbandonQuestion(ctx context.Context, batchID string, index int, cause error) error
}

type benchQuestionWorker struct {
	river.WorkerDefaults[BenchQuestionArgs]
	runner  QuestionRunner
	timeout time.Duration
}

func (w *benchQuestionWorker) Timeout(*river.Job[BenchQuestionArgs]) time.Duration { return w.timeout }

// Work runs the question. A failure is retried by River until the job's
// last attempt, whose failure gives the question up (so that its batch
// still finishes).
func (w *benchQuestionWorker) Work(ctx context.Context, job *river.Job[BenchQuestionArgs]) error {
	err := w.runner.RunQuestion(ctx, job.Args.BatchID, job.Args.Index)
	if err == nil || job.Attempt < job.MaxAttempts {
		return err
	}
	// The attempt's context may be what ended it: giving up needs its own.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abandonTimeout)
	defer cancel()
	if aerr := w.runner.AbandonQuestion(actx, job.Args.BatchID, job.Args.Index, err); aerr != nil {
		return errors.Join(err, aerr)
	}
	return nil
}

// abandonTimeout bounds giving a question up, which writes and may score
// its batch.
const abandonTimeout = time.Minute

var (
	_ river.Worker[BenchQuestionArgs] = (*benchQuestionWorker)(nil)
	_ pgstore.QuestionQueue           = (*QuestionQueue)(nil)
	_ QuestionRunner                  = (*runs.Executor)(nil)
)

// orphanedQuestions finds the questions still pending in a running batch
// whose job River discarded: a job whose last attempt died with its
// process is rescued as discarded without Work returning, so nothing gave
// its question up. At most limit, oldest batches first.
const orphanedQuestions = `
SELECT q.batch_id::text, q.index
  FROM batch_questions q
  JOIN batches b ON b.id = q.batch_id AND b.status = 'running'
 WHERE q.state = 'pending'
   AND EXISTS (SELECT 1 FROM river_job j
                WHERE j.kind = 'bench_question' AND j.state = 'discarded'
                  AND j.args->>'batch_id' = q.batch_id::text AND (j.args->>'index')::int = q.index)
   AND NOT EXISTS (SELECT 1 FROM river_job j
                    WHERE j.kind = 'bench_question' AND j.state NOT IN ('discarded', 'cancelled', 'completed')
                      AND j.args->>'batch_id' = q.batch_id::text AND (j.args->>'index')::int = q.index)
 ORDER BY b.created_at, q.index
 LIMIT $1`

// errJobDied is the cause a question given up by the sweep is recorded
// with.
var errJobDied = errors.New("its job's last attempt died with its process (discarded by River's rescuer)")

// SweepQuestions gives up, through runner, every question orphaned as
// orphanedQuestions describes, so that its batch still finishes; it
// returns how many. The hold sweep's periodic job runs it when the Runner
// works benchmark questions.
func SweepQuestions(ctx context.Context, pool *pgxpool.Pool, runner QuestionRunner) (int, error) {
	rows, err := pool.Query(ctx, orphanedQuestions, 500)
	if err != nil {
		return 0, fmt.Errorf("finding orphaned benchmark questions: %w", err)
	}
	type orphan struct {
		batchID string
		index   int
	}
	var found []orphan
	for rows.Next() {
		var o orphan
		if err := rows.Scan(&o.batchID, &o.index); err != nil {
			rows.Close()
			return 0, err
		}
		found = append(found, o)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for i, o := range found {
		if err := runner.AbandonQuestion(ctx, o.batchID, o.index, errJobDied); err != nil {
			return i, fmt.Errorf("giving up question %d of batch %s: %w", o.index, o.batchID, err)
		}
	}
	return len(found), nil
}
