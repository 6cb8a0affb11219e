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
	"github.com/riverqueue/river/rivertype"

	"github.com/conclavehq/conclave/core/bench/runs"
	"github.com/conclavehq/conclave/internal/pgstore"
)

// Benchmark questions: one River job per question of a launched batch
// (core/bench/runs), inserted in the launch's own transaction
// (QuestionQueue) and worked on a queue of their own, BenchQueue, whose
// parallelism is Config.BenchWorkers — apart from the maintenance jobs,
// and apart from the organisations' concurrency slots, which only
// interactive calls take. The workers are shared fairly between
// organisations: the queue is fetched one organisation after another
// (fairSlots).

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
	// OrgID is the batch's organisation, whose turn in the queue the job
	// takes (fairSlots). It is not part of the job's identity.
	OrgID string `json:"org_id,omitempty"`
}

// Kind implements river.JobArgs.
func (BenchQuestionArgs) Kind() string { return "bench_question" }

// Hooks implements river.JobArgsWithHooks.
func (BenchQuestionArgs) Hooks() []rivertype.Hook { return []rivertype.Hook{&availableWhenDue{}} }

// availableWhenDue makes a question job whose ScheduledAt has come
// available as it is inserted. River marks every job given a ScheduledAt
// scheduled, to wait for its leader's scheduler (seconds); a question's
// ScheduledAt is a place in the queue's order (fairSlots), never a delay.
// A slot past this process's clock (the database's runs ahead of it) waits
// for the scheduler, as River would have it.
type availableWhenDue struct{ river.HookDefaults }

func (*availableWhenDue) InsertBegin(_ context.Context, p *rivertype.JobInsertParams) error {
	if p.State == rivertype.JobStateScheduled && p.ScheduledAt != nil && !p.ScheduledAt.After(time.Now()) {
		p.State = rivertype.JobStateAvailable
	}
	return nil
}

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
// 0…count−1 of orgID's batch, in tx, each in its organisation's turn
// (fairSlots). The caller serialises the launches of one organisation
// (pgstore's launch holds its balance row), so that each sees the jobs of
// the one before; launches of different organisations need not be.
func (q *QuestionQueue) EnqueueQuestions(ctx context.Context, tx pgx.Tx, orgID, batchID string, count int) error {
	var head, last *time.Time
	var now time.Time
	if err := tx.QueryRow(ctx, waitingRounds, BenchQueue, BenchQuestionArgs{}.Kind(), orgID).Scan(&head, &last, &now); err != nil {
		return fmt.Errorf("jobs: reading the bench queue's turns for batch %s: %w", batchID, err)
	}
	slots := fairSlots(head, last, now, count)
	params := make([]river.InsertManyParams, count)
	for i := range params {
		params[i] = river.InsertManyParams{
			Args: BenchQuestionArgs{BatchID: batchID, Index: i, OrgID: orgID},
			InsertOpts: &river.InsertOpts{Queue: BenchQueue, MaxAttempts: q.attempts, ScheduledAt: slots[i],
				UniqueOpts: river.UniqueOpts{ByArgs: true}},
		}
	}
	if _, err := q.client.InsertManyTx(ctx, tx, params); err != nil {
		return fmt.Errorf("jobs: enqueuing the questions of batch %s: %w", batchID, err)
	}
	return nil
}

// Fair turns. River fetches a queue's available jobs by priority, then
// scheduled_at, then id, and knows no organisations; so a question job's
// scheduled_at is its place in a round-robin of the organisations with
// questions waiting, set when it is inserted. The waiting first attempts
// of the bench queue sit on a grid of slotSpacing steps from the queue's
// head (the oldest one): an organisation's k-th waiting question is in
// the k-th round, and a round holds at most one question of each
// organisation (ties go by id, the earlier launch first). A new launch
// continues its organisation's turns after its last waiting question, or,
// with none waiting, starts at the head, in the round River fetches next.
// An idle queue's grid starts fairHorizon back, so that no slot reaches
// the present; one that would is put at now (never in the future), behind
// the others. Retries are not on the grid: River schedules a retry at its
// backoff's end, in real time, after every slot — a retried question
// waits for the first attempts waiting, as it waited for those launched
// before it when the queue was first-in first-out.

// slotSpacing is one round of the grid: PostgreSQL's timestamp resolution.
const slotSpacing = time.Microsecond

// fairHorizon is how far before now an idle queue's grid starts: sixty
// million rounds, where an organisation's waiting questions are counted in
// thousands.
const fairHorizon = time.Minute

// waitingRounds reads the grid: the head (the first waiting first attempt
// in River's fetch order, by its fetch index), the organisation's last
// waiting first attempt (by the jobs' args index: the organisation's jobs
// River still keeps), and the database's now.
const waitingRounds = `
SELECT (SELECT scheduled_at FROM river_job
         WHERE state = 'available' AND queue = $1 AND attempt = 0
         ORDER BY priority, scheduled_at, id LIMIT 1),
       (SELECT max(scheduled_at) FROM river_job
         WHERE args @> jsonb_build_object('org_id', $3::text) AND kind = $2 AND queue = $1
           AND state IN ('available', 'scheduled') AND attempt = 0),
       now()`

// fairSlots places count new questions of an organisation on the grid:
// after last, its last waiting question (nil: none waiting), or else at
// head, the queue's (nil, or later than fairHorizon before now: an idle
// grid, which starts there); one slot apart, none after now.
func fairSlots(head, last *time.Time, now time.Time, count int) []time.Time {
	start := now.Add(-fairHorizon)
	if head != nil && head.Before(start) {
		start = *head
	}
	if last != nil && !last.Before(start) {
		start = last.Add(slotSpacing)
	}
	slots := make([]time.Time, count)
	for i := range slots {
		slots[i] = start.Add(time.Duration(i) * slotSpacing)
		if slots[i].After(now) {
			slots[i] = now
		}
	}
	return slots
}

// CancelQuestions implements pgstore.QuestionQueue: the jobs of the
// batch's questions indexes that have not ended are cancelled in tx
// (River's JobCancelTx). One still waiting is never worked; one running has
// its context cancelled by the replica working it, told after tx commits.
// The jobs of the batch's other questions — those the cancel kept, because
// they had an answer — are left to run them to their end.
func (q *QuestionQueue) CancelQuestions(ctx context.Context, tx pgx.Tx, batchID string, indexes []int) error {
	if len(indexes) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, `SELECT id FROM river_job
		WHERE kind = $1 AND args @> jsonb_build_object('batch_id', $2::text) AND finalized_at IS NULL
		  AND (args->>'index')::int = ANY ($3::int[])`,
		BenchQuestionArgs{}.Kind(), batchID, indexes)
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
	_ river.JobArgsWithHooks          = BenchQuestionArgs{}
	_ rivertype.HookInsertBegin       = (*availableWhenDue)(nil)
	_ pgstore.QuestionQueue           = (*QuestionQueue)(nil)
	_ QuestionRunner                  = (*runs.Executor)(nil)
)

// orphanedQuestions finds the questions still pending in a running batch
// (or in a cancelled one, which keeps the questions that had an answer)
// whose job River discarded: a job whose last attempt died with its
// process is rescued as discarded without Work returning, so nothing gave
// its question up. At most limit, oldest batches first.
const orphanedQuestions = `
SELECT q.batch_id::text, q.index
  FROM batch_questions q
  JOIN batches b ON b.id = q.batch_id AND b.status IN ('running', 'cancelled')
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
