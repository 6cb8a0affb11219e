package pgstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/conclavehq/conclave/core"
)

// The background jobs' writes (internal/jobs runs them on River): trial
// credit expiry, the hold sweeper and the idempotency reaper. Each is safe to
// run on every replica at once and to run twice: rows are claimed with
// FOR UPDATE (SKIP LOCKED where another worker may hold them) and every
// change is conditional on the state it moves from.

//go:embed jobs_queries.sql
var jobsQueriesSQL string

var jobQueries = parseQueries(jobsQueriesSQL)

// jq returns the named query of jobs_queries.sql.
func jq(name string) string {
	s, ok := jobQueries[name]
	if !ok {
		panic(fmt.Sprintf("jobs_queries.sql has no query %q", name))
	}
	return s
}

// defaultJobBatch caps the rows one pass of a job touches when the caller
// sets no limit; the next pass takes the rest.
const defaultJobBatch = 1000

// at maps a zero time to NULL: the database's clock.
func at(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// ExpireTrialsParams are the inputs of Store.ExpireTrials and Store.ExpireTrial.
type ExpireTrialsParams struct {
	// At is the moment the job acts as of. Zero means the database's clock.
	At time.Time
	// Period is how long after its organisation's creation trial credit
	// expires. Zero means core.TrialPeriod.
	Period time.Duration
	// Limit caps the organisations one ExpireTrials call looks at. Zero
	// means 1000.
	Limit int
}

func (p *ExpireTrialsParams) withDefaults() ExpireTrialsParams {
	out := *p
	if out.Period <= 0 {
		out.Period = core.TrialPeriod
	}
	if out.Limit <= 0 {
		out.Limit = defaultJobBatch
	}
	return out
}

// TrialExpiry is what expiring one organisation's trial did.
type TrialExpiry struct {
	OrgID string
	// Deducted is the unused trial credit taken out of the balance (zero
	// when the trial was not due, already expired, or all of the balance is
	// held by calls in flight).
	Deducted core.Micros
	// Left is the trial credit still to deduct: the part live holds need.
	// A later run takes it once they are settled or released.
	Left core.Micros
	// Balance is the balance after the deduction; nil when nothing changed.
	Balance *core.Balance
}

// ExpireTrialsResult sums one ExpireTrials pass.
type ExpireTrialsResult struct {
	// Orgs counts the organisations charged.
	Orgs int
	// Deducted is the trial credit deducted, over all of them.
	Deducted core.Micros
	// Deferred counts the organisations with trial credit left because live
	// holds need it.
	Deferred int
}

// ExpireTrials deducts the unused trial credit of every organisation whose
// trial period is over, each in its own transaction (ExpireTrial), up to
// p.Limit organisations.
func (s *Store) ExpireTrials(ctx context.Context, p *ExpireTrialsParams) (*ExpireTrialsResult, error) {
	pp := p.withDefaults()
	var due []string
	after := ""
	for len(due) < pp.Limit {
		rows, err := s.pool.Query(ctx, jq("TrialsDue"), at(pp.At), pp.Period.Microseconds(), after, pp.Limit-len(due))
		if err != nil {
			return nil, fmt.Errorf("expiring trials: listing the due organisations: %w", translate(err))
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, fmt.Errorf("expiring trials: listing the due organisations: %w", translate(err))
		}
		due = append(due, ids...)
		if len(ids) == 0 || len(due) >= pp.Limit {
			break
		}
		after = ids[len(ids)-1]
	}
	res := &ExpireTrialsResult{}
	for _, orgID := range due {
		e, err := s.ExpireTrial(ctx, orgID, &pp)
		if err != nil {
			return res, err
		}
		if e.Deducted > 0 {
			res.Orgs++
			res.Deducted += e.Deducted
		}
		if e.Left > 0 {
			res.Deferred++
		}
	}
	return res, nil
}

// ExpireTrial deducts, in one transaction, the unused trial credit of one
// organisation whose trial period is over: min(trial remaining, balance −
// held), so that it never takes money a live hold reserved. It journals the
// deduction as a core.PostingTrialExpiry and, once no trial credit is left
// (or none was, all spent on calls), marks the trial expired
// (balances.trial_expired_at). Running it again deducts nothing more (or, when
// holds deferred a part, only what has become free since). p.Limit is
// ignored.
func (s *Store) ExpireTrial(ctx context.Context, orgID string, p *ExpireTrialsParams) (*TrialExpiry, error) {
	pp := p.withDefaults()
	out := &TrialExpiry{OrgID: orgID}
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		var balance, held, trial core.Micros
		var expired, due bool
		err := tx.QueryRow(ctx, jq("LockTrial"), orgID, at(pp.At), pp.Period.Microseconds()).
			Scan(&balance, &held, &trial, &expired, &due)
		if err != nil {
			return translate(err)
		}
		if expired || !due {
			return nil
		}
		if trial == 0 {
			// Spent on calls before its end: the trial is over, with
			// nothing to deduct.
			_, err := scanBalance(tx.QueryRow(ctx, jq("DeductTrial"), orgID, int64(0)))
			return err
		}
		deduct := min(trial, balance-held)
		out.Left = trial - max(deduct, 0)
		if deduct <= 0 {
			return nil
		}
		if err := journal(ctx, tx, orgID, core.PostingTrialExpiry, "unused trial credit expired", core.AccountTrialIssued, deduct); err != nil {
			return err
		}
		bal, err := scanBalance(tx.QueryRow(ctx, jq("DeductTrial"), orgID, int64(deduct)))
		if err != nil {
			return err
		}
		out.Deducted, out.Balance = deduct, bal
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("expiring the trial credit of %s: %w", orgID, err)
	}
	return out, nil
}

// SweepParams are the inputs of Store.SweepHolds.
type SweepParams struct {
	// At is the moment the sweep acts as of. Zero means the database's clock.
	At time.Time
	// Grace is how long past its expiry a lease (a hold's expires_at, a
	// slot's lease_until, a claim's locked_until) must be before it is swept:
	// room for a live call's renewal running late. Zero sweeps every lease
	// that has ended.
	Grace time.Duration
	// Limit caps the holds released, and separately the slots and claims
	// deleted, in one call. Zero means 1000.
	Limit int
}

// SweepResult is what one SweepHolds call did.
type SweepResult struct {
	// HoldsReleased counts the expired holds released; Released is the money
	// they had reserved, available again.
	HoldsReleased int
	Released      core.Micros
	// SlotsFreed counts the concurrency slots deleted: those of the released
	// holds' calls and expired leases of calls with no live hold, the
	// latter for people's slots of plan usage too. (A released hold's
	// call gives back its person's slot with its organisation's, counted
	// once.)
	SlotsFreed int
	// ClaimsFreed counts the in-flight idempotency claims deleted, so that a
	// retry with the same key runs again.
	ClaimsFreed int
	// Outcomes counts the call outcomes recorded ("abandoned"); a call that
	// already had one keeps it.
	Outcomes int
}

// ReleasedHold is one hold the sweeper released.
type ReleasedHold struct {
	HoldID, OrgID, RequestID string
	Amount                   core.Micros
}

// SweepHolds resolves the calls whose process died: every hold still 'held'
// whose expiry passed (a live call renews it) is released, each in its own
// transaction together with what its call held — its concurrency slots, its
// in-flight idempotency claim — and an "abandoned" call outcome. Nothing is
// billed: the caller never got an answer. Then it deletes expired slot
// leases and expired in-flight claims of calls that hold no money.
//
// Holds are claimed with FOR UPDATE SKIP LOCKED, so sweepers on several
// replicas share the work and never release a hold twice.
func (s *Store) SweepHolds(ctx context.Context, p *SweepParams) (*SweepResult, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = defaultJobBatch
	}
	res := &SweepResult{}
	for res.HoldsReleased < limit {
		h, outcome, err := s.releaseExpiredHold(ctx, p, res)
		if err != nil {
			return res, err
		}
		if h == nil {
			break
		}
		res.HoldsReleased++
		res.Released += h.Amount
		if outcome {
			res.Outcomes++
		}
	}
	tag, err := s.pool.Exec(ctx, jq("SweepExpiredSlots"), at(p.At), p.Grace.Microseconds(), limit)
	if err != nil {
		return res, fmt.Errorf("sweeping expired concurrency slots: %w", translate(err))
	}
	res.SlotsFreed += int(tag.RowsAffected())
	tag, err = s.pool.Exec(ctx, jq("SweepExpiredPersonSlots"), at(p.At), p.Grace.Microseconds(), limit)
	if err != nil {
		return res, fmt.Errorf("sweeping expired person slots: %w", translate(err))
	}
	res.SlotsFreed += int(tag.RowsAffected())
	tag, err = s.pool.Exec(ctx, jq("SweepExpiredClaims"), at(p.At), p.Grace.Microseconds(), limit)
	if err != nil {
		return res, fmt.Errorf("sweeping expired idempotency claims: %w", translate(err))
	}
	res.ClaimsFreed += int(tag.RowsAffected())
	return res, nil
}

// releaseExpiredHold releases one expired hold and frees its call, in one
// transaction; nil when no expired hold is left (or every one is locked by
// another sweeper).
func (s *Store) releaseExpiredHold(ctx context.Context, p *SweepParams, res *SweepResult) (*ReleasedHold, bool, error) {
	var h *ReleasedHold
	var slots, claims int
	var outcome bool
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		var r ReleasedHold
		err := tx.QueryRow(ctx, jq("ReleaseExpiredHold"), at(p.At), p.Grace.Microseconds()).
			Scan(&r.HoldID, &r.OrgID, &r.RequestID, &r.Amount)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return translate(err)
		}
		// The same balance update as ReleaseHold: drop the hold, charge nothing.
		if _, err := scanBalance(tx.QueryRow(ctx, q("ChargeHeld"), r.OrgID, int64(r.Amount), int64(0))); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, jq("FreeSlotsOf"), r.OrgID, r.RequestID)
		if err != nil {
			return translate(err)
		}
		slots = int(tag.RowsAffected())
		if tag, err = tx.Exec(ctx, jq("FreeClaimOf"), r.OrgID, r.RequestID); err != nil {
			return translate(err)
		}
		claims = int(tag.RowsAffected())
		tag, err = tx.Exec(ctx, jq("RecordOutcome"), r.RequestID, r.OrgID, core.OutcomeAbandonedEndpoint,
			string(core.OutcomeAbandoned), core.OutcomeAbandonedReason)
		if err != nil {
			return translate(err)
		}
		outcome = tag.RowsAffected() == 1
		h = &r
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("releasing an expired hold: %w", err)
	}
	res.SlotsFreed += slots
	res.ClaimsFreed += claims
	return h, outcome, nil
}

// ReapParams are the inputs of Store.ReapIdempotencyKeys.
type ReapParams struct {
	// At is the moment the reaper acts as of. Zero means the database's clock.
	At time.Time
	// Retention is how long a finished claim is kept after its last update
	// (and so how long a retry with its key replays). Must be positive.
	Retention time.Duration
	// Batch is how many rows one statement deletes. Zero means 1000.
	Batch int
}

// ReapIdempotencyKeys deletes the idempotency claims that are finished (not
// in flight) and were last updated more than p.Retention before p.At, a
// batch per transaction until none is left. It returns how many it deleted.
// With a claim goes its call's stored answer when the call's receipt was
// kept without its transcript (core.Org.KeepTranscripts off): the answer
// was kept only for replays.
func (s *Store) ReapIdempotencyKeys(ctx context.Context, p *ReapParams) (int, error) {
	if p.Retention <= 0 {
		return 0, fmt.Errorf("reaping idempotency keys: retention %s is not positive", p.Retention)
	}
	batch := p.Batch
	if batch <= 0 {
		batch = defaultJobBatch
	}
	total := 0
	for {
		var n int
		err := s.pool.QueryRow(ctx, jq("ReapIdempotencyKeys"), at(p.At), p.Retention.Microseconds(), batch).Scan(&n)
		if err != nil {
			return total, fmt.Errorf("reaping idempotency keys: %w", translate(err))
		}
		total += n
		if n < batch {
			return total, nil
		}
	}
}
