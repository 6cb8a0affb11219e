package pgstore

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/bench/runs"
)

// Benchmark runs (core/bench/runs): launches, batches, their questions and
// judgments. A launch is one transaction with its charge and its question
// jobs, which a QuestionQueue inserts into the same transaction (River's
// jobs live in this database): a launch that commits has its charge, its
// batch and its jobs, and one that does not has none of them.

//go:embed batches_queries.sql
var batchesQueriesSQL string

var batchesQueries = parseQueries(batchesQueriesSQL)

// rq returns the named query of batches_queries.sql.
func rq(name string) string {
	s, ok := batchesQueries[name]
	if !ok {
		panic(fmt.Sprintf("batches_queries.sql has no query %q", name))
	}
	return s
}

// QuestionQueue enqueues the durable jobs of a batch's questions (one per
// question, indexes 0…count−1) inside the launch's transaction, in orgID's
// turn among the organisations with questions waiting; internal/jobs
// implements it on River. A launch calls it holding its organisation's
// balance row, so one organisation's launches enqueue one at a time.
type QuestionQueue interface {
	EnqueueQuestions(ctx context.Context, tx pgx.Tx, orgID, batchID string, count int) error
	// CancelQuestions cancels, inside tx, the jobs of the batch's questions
	// indexes (those a cancel cancelled) that have not ended: a waiting job
	// never runs, and a running one has its context cancelled once tx
	// commits, so that a cancelled question stops asking providers. The
	// other questions' jobs run on: a question kept by the cancel is judged.
	CancelQuestions(ctx context.Context, tx pgx.Tx, batchID string, indexes []int) error
}

// Batches implements runs.LaunchStore and runs.RunStore on a pgx pool. It
// is safe for concurrent use.
type Batches struct {
	pool  *pgxpool.Pool
	queue QuestionQueue
}

// NewBatches returns the batch store over pool, enqueuing question jobs
// with queue. A store without a queue reads and runs batches, and refuses
// to launch them.
func NewBatches(pool *pgxpool.Pool, queue QuestionQueue) *Batches {
	return &Batches{pool: pool, queue: queue}
}

// ClaimLaunch implements runs.LaunchStore.
func (s *Batches) ClaimLaunch(ctx context.Context, p *runs.ClaimLaunchParams) (*runs.LaunchClaim, error) {
	// The holder's row can go between the insert and the read (its launch
	// was refused and released it): then the key is free to claim again.
	for range 3 {
		var until time.Time
		err := s.pool.QueryRow(ctx, rq("InsertLaunchClaim"), p.OrgID, p.Key, string(p.Kind), p.RequestHash, p.BatchID,
			p.Lease.Microseconds(), p.Lapse.Microseconds()).Scan(&until)
		if err == nil {
			return &runs.LaunchClaim{Won: true, State: runs.ClaimInFlight, Kind: p.Kind, RequestHash: p.RequestHash,
				BatchID: p.BatchID, LockedUntil: until}, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("claiming launch key: %w", translate(err))
		}
		if _, err := s.pool.Exec(ctx, rq("StopLapsedLaunchClaim"), p.OrgID, p.Key); err != nil {
			return nil, fmt.Errorf("reading launch key: %w", translate(err))
		}
		c := &runs.LaunchClaim{}
		err = s.pool.QueryRow(ctx, rq("GetLaunchClaim"), p.OrgID, p.Key).Scan(&c.Kind, &c.RequestHash, &c.BatchID, &c.State, &c.LockedUntil)
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("reading launch key: %w", translate(err))
		}
	}
	return nil, errors.New("claiming launch key: the key changed hands three times")
}

// ReleaseLaunch implements runs.LaunchStore.
func (s *Batches) ReleaseLaunch(ctx context.Context, orgID, key, batchID string) error {
	_, err := s.pool.Exec(ctx, rq("ReleaseLaunchClaim"), orgID, key, batchID)
	return translate(err)
}

// Launch implements runs.LaunchStore: one transaction, whose commit is the
// launch. A commit whose answer never came back is core.ErrOutcomeUnknown.
func (s *Batches) Launch(ctx context.Context, p *runs.LaunchParams) (*runs.Batch, error) {
	if s.queue == nil {
		return nil, errors.New("launching a batch: the store has no question queue")
	}
	b := p.Batch
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("launching a batch: %w", translate(err))
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := s.launch(ctx, tx, p); err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			// The server answered: it rolled the launch back.
			return nil, fmt.Errorf("launching batch %s: %w", b.ID, translate(err))
		}
		return nil, fmt.Errorf("launching batch %s: %w: %w", b.ID, core.ErrOutcomeUnknown, err)
	}
	if stored, err := s.batch(ctx, b.ID, b.OrgID); err == nil {
		return stored, nil
	}
	// Launched, but not read back: the batch as written, which is what
	// the read would have answered but for its timestamps.
	return launched(p), nil
}

// launched is a batch just launched, as its launch wrote it.
func launched(p *runs.LaunchParams) *runs.Batch {
	b := *p.Batch
	b.Status = runs.StatusQueued
	b.Progress = runs.Progress{Total: len(p.Questions)}
	b.Buckets = map[runs.Bucket]runs.Progress{}
	for _, q := range p.Questions {
		bp := b.Buckets[q.Bucket]
		bp.Total++
		b.Buckets[q.Bucket] = bp
	}
	b.CreatedAt = time.Now()
	return &b
}

func (s *Batches) launch(ctx context.Context, tx pgx.Tx, p *runs.LaunchParams) error {
	b := p.Batch
	price := int64(b.Billed)
	// The balance row first: every launch and settlement of the
	// organisation waits for it, so the limits below count what committed.
	var available, trial int64
	var noBilling bool
	if err := tx.QueryRow(ctx, rq("LockBalanceForLaunch"), b.OrgID).Scan(&available, &noBilling, &trial); err != nil {
		return fmt.Errorf("launching a batch: reading the balance: %w", translate(err))
	}
	var launched int
	if err := tx.QueryRow(ctx, rq("LaunchesToday"), b.OrgID, string(b.Kind)).Scan(&launched); err != nil {
		return fmt.Errorf("launching a batch: counting today's launches: %w", translate(err))
	}
	if launched >= p.DailyLimit {
		return runs.ErrDailyLimit
	}
	var shares core.Micros
	for _, q := range p.Questions {
		shares += q.Price
	}
	if shares != b.Billed {
		return fmt.Errorf("launching a batch: its questions' prices add up to %d µ$, not the %d µ$ it charges", shares, b.Billed)
	}
	if price > 0 {
		if err := spendRules(ctx, tx, b.OrgID, price, p); err != nil {
			return err
		}
		if available < price {
			if noBilling {
				return core.ErrNoBilling
			}
			return core.ErrInsufficientFunds
		}
		if err := chargeLaunch(ctx, tx, b); err != nil {
			return err
		}
	}
	var attempt any
	if b.Kind == runs.KindCertify {
		var n int
		if err := tx.QueryRow(ctx, rq("NextCertifyAttempt"), b.ModeID, b.ModeVersion).Scan(&n); err != nil {
			return fmt.Errorf("launching a batch: numbering the attempt: %w", translate(err))
		}
		attempt = n
	}
	plan, err := json.Marshal(b.Plan)
	if err != nil {
		return fmt.Errorf("launching a batch: encoding its plan: %w", err)
	}
	quote, err := json.Marshal(b.Quote)
	if err != nil {
		return fmt.Errorf("launching a batch: encoding its quote: %w", err)
	}
	judges := make([]string, len(b.Plan.Judges))
	for i, j := range b.Plan.Judges {
		judges[i] = string(j)
	}
	// The batch and its audit row: one batch of statements, one trip.
	wb := &pgx.Batch{}
	wb.Queue(rq("InsertBatch"), b.ID, b.OrgID, string(b.Kind), b.Model, b.ModeID, b.ModeKey, b.ModeVersion,
		b.ModeConfigHash, plan, string(b.Plan.Protocol), judges, b.Plan.Repeats, b.Seed, b.BankVersion, quote, price,
		attempt, len(p.Questions), min(trial, price), b.PersonID)
	action := core.AuditTestLaunched
	if b.Kind == runs.KindCertify {
		action = core.AuditCertifyLaunched
	}
	queueAudit(ctx, wb, b.OrgID, action, b.ID, fmt.Sprintf("%s v%d, %d questions, $%s", b.ModeID, b.ModeVersion, len(p.Questions), b.Billed))
	if err := sendBatch(ctx, tx, wb); err != nil {
		return fmt.Errorf("launching a batch: writing it: %w", err)
	}
	n := len(p.Questions)
	idx, buckets, tiers, ids, prices := make([]int32, n), make([]string, n), make([]string, n), make([]string, n), make([]int64, n)
	for i, q := range p.Questions {
		if q.Index != i {
			return fmt.Errorf("launching a batch: question %d has index %d", i, q.Index)
		}
		idx[i], buckets[i], tiers[i], ids[i], prices[i] = int32(i), string(q.Bucket), string(q.Tier), q.QuestionID, int64(q.Price)
	}
	if _, err := tx.Exec(ctx, rq("InsertBatchQuestions"), b.ID, idx, buckets, tiers, ids, prices); err != nil {
		return fmt.Errorf("launching a batch: writing its questions: %w", translate(err))
	}
	if err := s.queue.EnqueueQuestions(ctx, tx, b.OrgID, b.ID, n); err != nil {
		return fmt.Errorf("launching a batch: enqueuing its questions: %w", err)
	}
	if p.IdempotencyKey != "" {
		tag, err := tx.Exec(ctx, rq("MarkLaunched"), b.OrgID, p.IdempotencyKey, b.ID)
		if err != nil {
			return fmt.Errorf("launching a batch: recording its key: %w", translate(err))
		}
		if tag.RowsAffected() == 0 {
			return runs.ErrClaimLost
		}
	}
	return nil
}

// spendRules refuses a charge of price that would pass the organisation's
// monthly quota or, unverified, its activation allowance: the rules
// admit_call applies to a call's hold, over the same spend.
func spendRules(ctx context.Context, tx pgx.Tx, orgID string, price int64, p *runs.LaunchParams) error {
	spent := func(ever bool) (int64, error) {
		var n int64
		err := tx.QueryRow(ctx, rq("SpentSince"), orgID, ever).Scan(&n)
		return n, translate(err)
	}
	if p.MonthlyQuota != nil {
		n, err := spent(false)
		if err != nil {
			return fmt.Errorf("launching a batch: reading the month's spend: %w", err)
		}
		if n+price > int64(*p.MonthlyQuota) {
			return core.ErrQuotaExceeded
		}
	}
	if p.ActivationAllowance > 0 {
		n, err := spent(true)
		if err != nil {
			return fmt.Errorf("launching a batch: reading the spend: %w", err)
		}
		if n+price > int64(p.ActivationAllowance) {
			return core.ErrVerificationRequired
		}
	}
	return nil
}

// chargeLaunch charges a launch's price: a hold settled at once (which the
// spend rules count), a posting of the batch's kind and the balance.
func chargeLaunch(ctx context.Context, tx pgx.Tx, b *runs.Batch) error {
	kind, memo := core.PostingTestCharge, "test run "+b.ID
	if b.Kind == runs.KindCertify {
		kind, memo = core.PostingCertifyCharge, "certification "+b.ID
	}
	price := int64(b.Billed)
	if _, err := tx.Exec(ctx, rq("InsertLaunchHold"), core.NewID("hold"), b.OrgID, b.ID, price); err != nil {
		return fmt.Errorf("launching a batch: recording its charge: %w", translate(err))
	}
	var postingID int64
	var at time.Time
	if err := tx.QueryRow(ctx, q("InsertPosting"), kind, b.OrgID, memo).Scan(&postingID, &at); err != nil {
		return fmt.Errorf("launching a batch: journaling its charge: %w", translate(err))
	}
	if _, err := tx.Exec(ctx, q("InsertLeg"), postingID, core.AccountOrgBalance, b.OrgID, -price); err != nil {
		return fmt.Errorf("launching a batch: journaling its charge: %w", translate(err))
	}
	if _, err := tx.Exec(ctx, q("InsertLeg"), postingID, core.AccountRevenue, nil, price); err != nil {
		return fmt.Errorf("launching a batch: journaling its charge: %w", translate(err))
	}
	if _, err := tx.Exec(ctx, rq("ChargeForLaunch"), b.OrgID, price); err != nil {
		return fmt.Errorf("launching a batch: charging it: %w", translate(err))
	}
	return nil
}

// Batch implements runs.LaunchStore.
func (s *Batches) Batch(ctx context.Context, orgID, batchID string) (*runs.Batch, error) {
	if orgID == "" {
		return nil, core.ErrNotFound
	}
	return s.batch(ctx, batchID, orgID)
}

// QueuedQuestions implements runs.LaunchStore: the questions of batches
// still queued or running that are neither judged, given up on nor
// cancelled, by organisation.
func (s *Batches) QueuedQuestions(ctx context.Context) (runs.Waiting, error) {
	rows, err := s.pool.Query(ctx, `SELECT org_id, sum(total - judged - failed - cancelled)::int
		FROM batches WHERE status IN ('queued', 'running') GROUP BY org_id
		HAVING sum(total - judged - failed - cancelled) > 0`)
	if err != nil {
		return nil, translate(err)
	}
	waiting := runs.Waiting{}
	for rows.Next() {
		var org string
		var n int
		if err := rows.Scan(&org, &n); err != nil {
			rows.Close()
			return nil, translate(err)
		}
		waiting[org] = n
	}
	return waiting, translate(rows.Err())
}

// RunBatch implements runs.RunStore.
func (s *Batches) RunBatch(ctx context.Context, batchID string) (*runs.Batch, error) {
	return s.batch(ctx, batchID, "")
}

// batch reads a batch, scoped to orgID unless it is "".
func (s *Batches) batch(ctx context.Context, batchID, orgID string) (*runs.Batch, error) {
	var b runs.Batch
	var plan, quote, result, cert []byte
	err := s.pool.QueryRow(ctx, rq("GetBatch"), batchID, orgID).Scan(&b.ID, &b.OrgID, &b.Kind, &b.Model, &b.ModeID,
		&b.ModeKey, &b.ModeVersion, &b.ModeConfigHash, &plan, &b.Seed, &b.BankVersion, &quote, &b.Billed, &b.Attempt,
		&b.Status, &b.Progress.Total, &b.Progress.Answered, &b.Progress.Judged, &b.Progress.Failed, &result, &cert,
		&b.Failure, &b.CreatedAt, &b.StartedAt, &b.FinishedAt, &b.Progress.Cancelled, &b.Refunded, &b.PersonID)
	if err != nil {
		return nil, translate(err)
	}
	if err := json.Unmarshal(plan, &b.Plan); err != nil {
		return nil, fmt.Errorf("reading batch %s: its plan: %w", batchID, err)
	}
	if err := json.Unmarshal(quote, &b.Quote); err != nil {
		return nil, fmt.Errorf("reading batch %s: its quote: %w", batchID, err)
	}
	b.Result = result
	if cert != nil {
		if err := json.Unmarshal(cert, &b.Certification); err != nil {
			return nil, fmt.Errorf("reading batch %s: its certification: %w", batchID, err)
		}
	}
	rows, err := s.pool.Query(ctx, rq("BatchBuckets"), batchID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	b.Buckets = map[runs.Bucket]runs.Progress{}
	for rows.Next() {
		var bucket runs.Bucket
		var p runs.Progress
		if err := rows.Scan(&bucket, &p.Total, &p.Answered, &p.Judged, &p.Failed, &p.Cancelled); err != nil {
			return nil, translate(err)
		}
		b.Buckets[bucket] = p
	}
	return &b, translate(rows.Err())
}

// StartBatch implements runs.RunStore.
func (s *Batches) StartBatch(ctx context.Context, batchID string) error {
	_, err := s.pool.Exec(ctx, rq("StartBatch"), batchID)
	return translate(err)
}

// Question implements runs.RunStore.
func (s *Batches) Question(ctx context.Context, batchID string, index int) (*runs.Question, error) {
	if index < 0 {
		return nil, core.ErrNotFound
	}
	qs, err := s.questions(ctx, batchID, index)
	if err != nil {
		return nil, err
	}
	if len(qs) == 0 {
		return nil, core.ErrNotFound
	}
	return qs[0], nil
}

// Questions implements runs.RunStore.
func (s *Batches) Questions(ctx context.Context, batchID string) ([]*runs.Question, error) {
	return s.questions(ctx, batchID, -1)
}

// questions reads question index of the batch, or every one (index < 0),
// with their judgments.
func (s *Batches) questions(ctx context.Context, batchID string, index int) ([]*runs.Question, error) {
	rows, err := s.pool.Query(ctx, rq("GetQuestions"), batchID, index)
	if err != nil {
		return nil, translate(err)
	}
	var out []*runs.Question
	byIndex := map[int]*runs.Question{}
	for rows.Next() {
		q := &runs.Question{BatchID: batchID, Answers: map[runs.Side]*runs.Answer{}}
		var mode, baseline []byte
		if err := rows.Scan(&q.Index, &q.Bucket, &q.Tier, &q.QuestionID, &mode, &baseline, &q.State, &q.Failure, &q.Price); err != nil {
			rows.Close()
			return nil, translate(err)
		}
		for side, raw := range map[runs.Side][]byte{runs.SideMode: mode, runs.SideBaseline: baseline} {
			if raw == nil {
				continue
			}
			var a runs.Answer
			if err := json.Unmarshal(raw, &a); err != nil {
				rows.Close()
				return nil, fmt.Errorf("reading question %d of batch %s: its %s answer: %w", q.Index, batchID, side, err)
			}
			q.Answers[side] = &a
		}
		out = append(out, q)
		byIndex[q.Index] = q
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	rows, err = s.pool.Query(ctx, rq("GetJudgments"), batchID, index)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		j := &runs.Judgment{BatchID: batchID}
		var order []string
		var latency int64
		if err := rows.Scan(&j.Index, &j.Judge, &j.Repeat, &order, &j.Verdict, &j.Detail, &j.Cost, &latency); err != nil {
			return nil, translate(err)
		}
		for _, side := range order {
			j.Order = append(j.Order, runs.Side(side))
		}
		j.Latency = time.Duration(latency) * time.Microsecond
		if q := byIndex[j.Index]; q != nil {
			q.Judgments = append(q.Judgments, j)
		}
	}
	return out, translate(rows.Err())
}

// RecordAnswer implements runs.RunStore.
func (s *Batches) RecordAnswer(ctx context.Context, batchID string, index int, side runs.Side, a *runs.Answer) (*runs.Question, error) {
	query := rq("RecordModeAnswer")
	switch side {
	case runs.SideMode:
	case runs.SideBaseline:
		query = rq("RecordBaselineAnswer")
	default:
		return nil, fmt.Errorf("recording an answer: unknown side %q", side)
	}
	raw, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("recording an answer: %w", err)
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var both bool
		err := tx.QueryRow(ctx, query, batchID, index, raw).Scan(&both)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // answered already: the first answer stands
		}
		if err != nil {
			return translate(err)
		}
		if both {
			_, err = tx.Exec(ctx, rq("CountAnswered"), batchID)
		}
		return translate(err)
	})
	if err != nil {
		return nil, fmt.Errorf("recording the %s answer to question %d of batch %s: %w", side, index, batchID, err)
	}
	return s.Question(ctx, batchID, index)
}

// RecordJudgment implements runs.RunStore.
func (s *Batches) RecordJudgment(ctx context.Context, j *runs.Judgment) error {
	order := make([]string, len(j.Order))
	for i, side := range j.Order {
		order[i] = string(side)
	}
	var detail any
	if len(j.Detail) > 0 {
		detail = j.Detail
	}
	_, err := s.pool.Exec(ctx, rq("InsertJudgment"), j.BatchID, j.Index, string(j.Judge), j.Repeat, order,
		string(j.Verdict), detail, int64(max(j.Cost, 0)), max(j.Latency, 0).Microseconds())
	if err != nil {
		return fmt.Errorf("recording a judgment of question %d of batch %s: %w", j.Index, j.BatchID, translate(err))
	}
	return nil
}

// FinishQuestion implements runs.RunStore. The batch row is locked first,
// as CancelBatch locks it, so that a question finishing as its batch is
// cancelled is either finished or cancelled: the one that comes second
// finds the question no longer pending.
func (s *Batches) FinishQuestion(ctx context.Context, batchID string, index int, failure string) (runs.Progress, error) {
	state, judged, failed := runs.QuestionJudged, 1, 0
	if failure != "" {
		state, judged, failed = runs.QuestionFailed, 0, 1
	}
	var p runs.Progress
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, _, err := lockBatch(ctx, tx, batchID, ""); err != nil {
			return err
		}
		var price int64
		err := tx.QueryRow(ctx, rq("FinishQuestion"), batchID, index, string(state), failure).Scan(&price)
		if errors.Is(err, pgx.ErrNoRows) {
			// Finished already, or cancelled: nothing moves.
			return translate(tx.QueryRow(ctx, rq("BatchProgress"), batchID).Scan(&p.Total, &p.Answered, &p.Judged, &p.Failed, &p.Cancelled))
		}
		if err != nil {
			return translate(err)
		}
		if err := tx.QueryRow(ctx, rq("CountFinished"), batchID, judged, failed).Scan(&p.Total, &p.Answered, &p.Judged, &p.Failed, &p.Cancelled); err != nil {
			return translate(err)
		}
		if state == runs.QuestionFailed {
			return refund(ctx, tx, batchID, core.Micros(price))
		}
		return nil
	})
	if err != nil {
		return p, fmt.Errorf("finishing question %d of batch %s: %w", index, batchID, err)
	}
	return p, nil
}

// lockBatch locks a batch's row (scoped to orgID unless it is ""): its
// status, and whether every question is done.
func lockBatch(ctx context.Context, tx pgx.Tx, batchID, orgID string) (runs.Status, bool, error) {
	var st runs.Status
	var done bool
	if err := tx.QueryRow(ctx, rq("LockBatch"), batchID, orgID).Scan(&st, &done); err != nil {
		return "", false, translate(err)
	}
	return st, done, nil
}

// refund gives amount of the batch's charge back to its organisation: one
// posting of the batch's kind (core.PostingTestRefund,
// core.PostingCertifyRefund), the reverse of the charge, with the balance
// row, trial credit first as far as the charge spent it (RefundBatch), and
// the launch's settled hold, which the spend rules count. The caller holds
// the batch row, in tx; the batch's CHECK refuses a refund past its charge.
func refund(ctx context.Context, tx pgx.Tx, batchID string, amount core.Micros) error {
	if amount <= 0 {
		return nil
	}
	var orgID string
	var kind runs.Kind
	var trial int64
	if err := tx.QueryRow(ctx, rq("RefundBatch"), batchID, int64(amount)).Scan(&orgID, &kind, &trial); err != nil {
		return fmt.Errorf("refunding batch %s: %w", batchID, translate(err))
	}
	posting, memo := core.PostingTestRefund, "test run "+batchID
	if kind == runs.KindCertify {
		posting, memo = core.PostingCertifyRefund, "certification "+batchID
	}
	// A refund is a negative debit: org_balance +amount, revenue −amount.
	if err := journal(ctx, tx, orgID, posting, memo, core.AccountRevenue, -amount); err != nil {
		return fmt.Errorf("refunding batch %s: journaling it: %w", batchID, err)
	}
	if _, err := tx.Exec(ctx, rq("RefundToBalance"), orgID, int64(amount), trial); err != nil {
		return fmt.Errorf("refunding batch %s: crediting it: %w", batchID, translate(err))
	}
	if _, err := tx.Exec(ctx, rq("RefundLaunchHold"), batchID, int64(amount)); err != nil {
		return fmt.Errorf("refunding batch %s: taking it off the spend: %w", batchID, translate(err))
	}
	return nil
}

// FinishBatch implements runs.RunStore. A batch moved to failed is
// refunded what of its charge is left, in the same transaction.
func (s *Batches) FinishBatch(ctx context.Context, batchID string, o *runs.Outcome) (bool, error) {
	if o.Status != runs.StatusComplete && o.Status != runs.StatusFailed {
		return false, fmt.Errorf("finishing batch %s: %q is not a final status", batchID, o.Status)
	}
	var result, cert any
	if o.Status == runs.StatusComplete {
		result = json.RawMessage(o.Result)
		if len(o.Result) == 0 {
			result = json.RawMessage("{}")
		}
	}
	if o.Certification != nil {
		raw, err := json.Marshal(o.Certification)
		if err != nil {
			return false, fmt.Errorf("finishing batch %s: %w", batchID, err)
		}
		cert = raw
	}
	moved := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var left int64
		err := tx.QueryRow(ctx, rq("FinishBatch"), batchID, string(o.Status), result, cert, o.Failure, statuses(runs.MovesTo(o.Status))).Scan(&left)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return translate(err)
		}
		moved = true
		if o.Status == runs.StatusFailed {
			return refund(ctx, tx, batchID, core.Micros(left))
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("finishing batch %s: %w", batchID, err)
	}
	return moved, nil
}

// CancelBatch implements runs.LaunchStore.
func (s *Batches) CancelBatch(ctx context.Context, orgID, batchID string) (*runs.Batch, error) {
	if orgID == "" {
		return nil, core.ErrNotFound
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		st, done, err := lockBatch(ctx, tx, batchID, orgID)
		if err != nil {
			return err
		}
		if st == runs.StatusCancelled {
			return nil // cancelled already: nothing more to refund
		}
		if !st.CanMove(runs.StatusCancelled) || done {
			return runs.ErrBatchFinished
		}
		var indexes []int
		var prices int64
		if err := tx.QueryRow(ctx, rq("CancelQuestions"), batchID).Scan(&indexes, &prices); err != nil {
			return translate(err)
		}
		if len(indexes) == 0 {
			// Every question left is answered: it finishes, and so does the
			// batch, scored (the transaction rolls back).
			return runs.ErrBatchFinished
		}
		a := core.ActorOf(ctx)
		cb := &pgx.Batch{}
		cb.Queue(rq("CancelBatch"), batchID, statuses(runs.MovesTo(runs.StatusCancelled)))
		cb.Queue(rq("AuditBatchCancelled"), batchID, a.Kind, a.ID, a.Address)
		if err := sendBatch(ctx, tx, cb); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, rq("CountCancelled"), batchID, len(indexes)); err != nil {
			return translate(err)
		}
		if s.queue != nil {
			if err := s.queue.CancelQuestions(ctx, tx, batchID, indexes); err != nil {
				return err
			}
		}
		return refund(ctx, tx, batchID, core.Micros(prices))
	})
	if err != nil {
		if errors.Is(err, runs.ErrBatchFinished) || errors.Is(err, core.ErrNotFound) {
			return nil, err
		}
		return nil, fmt.Errorf("cancelling batch %s: %w", batchID, err)
	}
	return s.batch(ctx, batchID, orgID)
}

// statuses is a list of statuses as the queries take them.
func statuses(sts []runs.Status) []string {
	out := make([]string, len(sts))
	for i, st := range sts {
		out[i] = string(st)
	}
	return out
}

var (
	_ runs.LaunchStore = (*Batches)(nil)
	_ runs.RunStore    = (*Batches)(nil)
)
