package pgstore_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

const usd = core.MicrosPerUSD

type jobsBundle struct {
	ctx   context.Context
	pool  *pgxpool.Pool
	store *pgstore.Store
}

func setupJobs(t *testing.T) *jobsBundle {
	t.Helper()
	pool := pgtest.NewPool(t)
	return &jobsBundle{ctx: t.Context(), pool: pool, store: pgstore.New(pool)}
}

// org creates an organisation created age ago (its trial credit granted then).
func (b *jobsBundle) org(t *testing.T, name string, age time.Duration) string {
	t.Helper()
	return pgtest.OrgCreatedAgo(t, b.pool, name, age)
}

func (b *jobsBundle) balance(t *testing.T, orgID string) *core.Balance {
	t.Helper()
	bal, err := b.store.GetBalance(b.ctx, orgID)
	require.NoError(t, err)
	return bal
}

func (b *jobsBundle) trialExpired(t *testing.T, orgID string) bool {
	t.Helper()
	var expired bool
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT trial_expired_at IS NOT NULL FROM balances WHERE org_id = $1", orgID).Scan(&expired))
	return expired
}

// expiryPostings returns the organisation's trial-expiry postings.
func (b *jobsBundle) expiryPostings(t *testing.T, orgID string) []*core.Posting {
	t.Helper()
	ps, err := b.store.ListPostings(b.ctx, orgID)
	require.NoError(t, err)
	var out []*core.Posting
	for _, p := range ps {
		if p.Kind == core.PostingTrialExpiry {
			out = append(out, p)
		}
	}
	return out
}

// requireExpiryPosting checks that p moves amount from the organisation's
// balance back to the trial account, in two legs.
func requireExpiryPosting(t *testing.T, p *core.Posting, orgID string, amount core.Micros) {
	t.Helper()
	require.Len(t, p.Legs, 2)
	legs := map[string]core.Leg{}
	for _, l := range p.Legs {
		legs[l.Account] = l
	}
	require.Equal(t, -amount, legs[core.AccountOrgBalance].Amount)
	require.Equal(t, orgID, legs[core.AccountOrgBalance].OrgID)
	require.Equal(t, amount, legs[core.AccountTrialIssued].Amount)
	require.Empty(t, legs[core.AccountTrialIssued].OrgID)
}

const month = 31 * 24 * time.Hour

func TestExpireTrialsDeductsTheUnusedTrialCreditOnce(t *testing.T) {
	t.Parallel()
	b := setupJobs(t)
	due := b.org(t, "Due", month)
	fresh := b.org(t, "Fresh", 29*24*time.Hour)
	toppedUp := b.org(t, "Topped Up", month)
	_, err := b.store.AddFunds(b.ctx, &core.AddFundsParams{OrgID: toppedUp, Amount: 5 * usd})
	require.NoError(t, err)

	res, err := b.store.ExpireTrials(b.ctx, &pgstore.ExpireTrialsParams{})
	require.NoError(t, err)
	require.Equal(t, &pgstore.ExpireTrialsResult{Orgs: 2, Deducted: 20 * usd}, res)

	bal := b.balance(t, due)
	require.Zero(t, bal.Balance)
	require.Zero(t, bal.TrialRemaining)
	require.True(t, b.trialExpired(t, due))
	ps := b.expiryPostings(t, due)
	require.Len(t, ps, 1)
	requireExpiryPosting(t, ps[0], due, core.TrialCredit)

	bal = b.balance(t, toppedUp)
	require.Equal(t, 5*usd, bal.Balance, "the top-up stays; only the trial credit goes")
	require.Zero(t, bal.TrialRemaining)
	require.True(t, b.trialExpired(t, toppedUp))

	bal = b.balance(t, fresh)
	require.Equal(t, core.TrialCredit, bal.Balance, "a trial inside its 30 days is untouched")
	require.Equal(t, core.TrialCredit, bal.TrialRemaining)
	require.False(t, b.trialExpired(t, fresh))
	require.Empty(t, b.expiryPostings(t, fresh))

	// Again: nothing more is taken.
	res, err = b.store.ExpireTrials(b.ctx, &pgstore.ExpireTrialsParams{})
	require.NoError(t, err)
	require.Equal(t, &pgstore.ExpireTrialsResult{}, res)
	e, err := b.store.ExpireTrial(b.ctx, due, &pgstore.ExpireTrialsParams{})
	require.NoError(t, err)
	require.Zero(t, e.Deducted)
	require.Len(t, b.expiryPostings(t, due), 1)
	require.Equal(t, 5*usd, b.balance(t, toppedUp).Balance)

	requireBalanceEqualsJournal(t, b.pool)
}

func TestExpireTrialsActsAsOfAGivenMomentAndPeriod(t *testing.T) {
	t.Parallel()
	b := setupJobs(t)
	org := b.org(t, "Soon", 0)

	res, err := b.store.ExpireTrials(b.ctx, &pgstore.ExpireTrialsParams{At: time.Now().Add(29 * 24 * time.Hour)})
	require.NoError(t, err)
	require.Zero(t, res.Orgs)

	res, err = b.store.ExpireTrials(b.ctx, &pgstore.ExpireTrialsParams{At: time.Now().Add(month)})
	require.NoError(t, err)
	require.Equal(t, 1, res.Orgs)
	require.Zero(t, b.balance(t, org).TrialRemaining)

	short := b.org(t, "Short", time.Hour)
	res, err = b.store.ExpireTrials(b.ctx, &pgstore.ExpireTrialsParams{Period: 2 * time.Hour})
	require.NoError(t, err)
	require.Zero(t, res.Orgs)
	res, err = b.store.ExpireTrials(b.ctx, &pgstore.ExpireTrialsParams{Period: 30 * time.Minute})
	require.NoError(t, err)
	require.Equal(t, 1, res.Orgs)
	require.Zero(t, b.balance(t, short).Balance)
	requireBalanceEqualsJournal(t, b.pool)
}

// Trial credit partly spent on calls: only the rest is deducted.
func TestExpireTrialsDeductsOnlyWhatIsLeftOfAPartlySpentTrial(t *testing.T) {
	t.Parallel()
	b := setupJobs(t)
	org := b.org(t, "Spender", month)
	h, err := b.store.PlaceHold(b.ctx, &core.PlaceHoldParams{OrgID: org, RequestID: "req_spent", Amount: 4 * usd})
	require.NoError(t, err)
	_, err = b.store.SettleCall(b.ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: org, Billed: 3_250_000})
	require.NoError(t, err)
	_, err = b.store.AddFunds(b.ctx, &core.AddFundsParams{OrgID: org, Amount: 2 * usd})
	require.NoError(t, err)

	res, err := b.store.ExpireTrials(b.ctx, &pgstore.ExpireTrialsParams{})
	require.NoError(t, err)
	require.Equal(t, core.Micros(6_750_000), res.Deducted)
	bal := b.balance(t, org)
	require.Equal(t, 2*usd, bal.Balance, "the top-up is all that is left")
	require.Zero(t, bal.TrialRemaining)
	ps := b.expiryPostings(t, org)
	require.Len(t, ps, 1)
	requireExpiryPosting(t, ps[0], org, 6_750_000)
	requireBalanceEqualsJournal(t, b.pool)
}

// A trial spent on calls before its end closes with nothing to deduct.
func TestExpireTrialsClosesASpentTrialWithoutAPosting(t *testing.T) {
	t.Parallel()
	b := setupJobs(t)
	org := b.org(t, "All Spent", month)
	h, err := b.store.PlaceHold(b.ctx, &core.PlaceHoldParams{OrgID: org, RequestID: "req_all", Amount: core.TrialCredit})
	require.NoError(t, err)
	_, err = b.store.SettleCall(b.ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: org, Billed: core.TrialCredit})
	require.NoError(t, err)
	_, err = b.store.AddFunds(b.ctx, &core.AddFundsParams{OrgID: org, Amount: 5 * usd})
	require.NoError(t, err)
	require.False(t, b.trialExpired(t, org))

	res, err := b.store.ExpireTrials(b.ctx, &pgstore.ExpireTrialsParams{})
	require.NoError(t, err)
	require.Equal(t, &pgstore.ExpireTrialsResult{}, res)
	require.True(t, b.trialExpired(t, org))
	require.Equal(t, 5*usd, b.balance(t, org).Balance)
	require.Empty(t, b.expiryPostings(t, org))
	requireBalanceEqualsJournal(t, b.pool)
}

// Money a live hold reserved is never taken: the deduction stops at the
// available balance and the rest waits until the hold is gone.
func TestExpireTrialsLeavesWhatALiveHoldNeeds(t *testing.T) {
	t.Parallel()
	b := setupJobs(t)
	org := b.org(t, "Busy", month)
	h, err := b.store.PlaceHold(b.ctx, &core.PlaceHoldParams{OrgID: org, RequestID: "req_live", Amount: 7 * usd})
	require.NoError(t, err)

	res, err := b.store.ExpireTrials(b.ctx, &pgstore.ExpireTrialsParams{})
	require.NoError(t, err)
	require.Equal(t, &pgstore.ExpireTrialsResult{Orgs: 1, Deducted: 3 * usd, Deferred: 1}, res)
	bal := b.balance(t, org)
	require.Equal(t, 7*usd, bal.Balance)
	require.Equal(t, 7*usd, bal.Held)
	require.Equal(t, 7*usd, bal.TrialRemaining)
	require.False(t, b.trialExpired(t, org), "part of the trial is still to deduct")

	// While the hold lives, another run takes nothing.
	e, err := b.store.ExpireTrial(b.ctx, org, &pgstore.ExpireTrialsParams{})
	require.NoError(t, err)
	require.Zero(t, e.Deducted)
	require.Equal(t, 7*usd, e.Left)

	// The call settles for $2.50 (trial credit first); the next run takes
	// the $4.50 of trial credit left.
	_, err = b.store.SettleCall(b.ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: org, Billed: 2_500_000})
	require.NoError(t, err)
	res, err = b.store.ExpireTrials(b.ctx, &pgstore.ExpireTrialsParams{})
	require.NoError(t, err)
	require.Equal(t, &pgstore.ExpireTrialsResult{Orgs: 1, Deducted: 4_500_000}, res)
	bal = b.balance(t, org)
	require.Zero(t, bal.Balance)
	require.Zero(t, bal.TrialRemaining)
	require.True(t, b.trialExpired(t, org))
	ps := b.expiryPostings(t, org)
	require.Len(t, ps, 2)
	requireExpiryPosting(t, ps[0], org, 3*usd)
	requireExpiryPosting(t, ps[1], org, 4_500_000)
	requireBalanceEqualsJournal(t, b.pool)
	requireHeldEqualsLiveHolds(t, b.pool)
}

func TestExpireTrialRacingItselfDeductsOnce(t *testing.T) {
	t.Parallel()
	b := setupJobs(t)
	orgs := []string{b.org(t, "Race One", month), b.org(t, "Race Two", month), b.org(t, "Race Three", month)}
	results := concurrently(t, 6, func(int) (*pgstore.ExpireTrialsResult, error) {
		return b.store.ExpireTrials(b.ctx, &pgstore.ExpireTrialsParams{})
	})
	require.False(t, t.Failed())
	var total core.Micros
	for _, r := range results {
		total += r.Deducted
	}
	require.Equal(t, 3*core.TrialCredit, total)
	for _, org := range orgs {
		require.Len(t, b.expiryPostings(t, org), 1)
		require.Zero(t, b.balance(t, org).Balance)
	}
	requireBalanceEqualsJournal(t, b.pool)
}

// call is a call in flight as admission records it: a hold, a concurrency
// slot and an in-flight idempotency claim, all for one request.
type call struct {
	org, requestID, holdID string
	slot                   int
}

// startCall places a hold and takes a slot and a claim for a new request;
// expiresIn moves the hold's and the leases' expiry (negative: already
// past, as for a call whose process died).
func (b *jobsBundle) startCall(t *testing.T, org, requestID string, slot int, amount core.Micros, expiresIn time.Duration) call {
	t.Helper()
	h, err := b.store.PlaceHold(b.ctx, &core.PlaceHoldParams{OrgID: org, RequestID: requestID, Amount: amount})
	require.NoError(t, err)
	exp := expiresIn.Microseconds()
	_, err = b.pool.Exec(b.ctx, "UPDATE holds SET expires_at = now() + $2 * interval '1 microsecond' WHERE id = $1", h.ID, exp)
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, `INSERT INTO concurrency_slots (org_id, slot, request_id, lease_until)
		VALUES ($1, $2, $3, now() + $4 * interval '1 microsecond')`, org, slot, requestID, exp)
	require.NoError(t, err)
	b.claim(t, org, "key-"+requestID, requestID, core.ClaimInFlight, expiresIn, 0)
	return call{org: org, requestID: requestID, holdID: h.ID, slot: slot}
}

// claim inserts an idempotency claim locked for lockedFor and last updated
// age ago.
func (b *jobsBundle) claim(t *testing.T, org, key, requestID string, state core.ClaimState, lockedFor, age time.Duration) {
	t.Helper()
	hash := sha256.Sum256([]byte(key))
	_, err := b.pool.Exec(b.ctx, `INSERT INTO idempotency_keys (org_id, key, request_hash, request_id, state, locked_until, updated_at)
		VALUES ($1, $2, $3, $4, $5, now() + $6 * interval '1 microsecond', now() - $7 * interval '1 microsecond')`,
		org, key, hash[:], requestID, string(state), lockedFor.Microseconds(), age.Microseconds())
	require.NoError(t, err)
}

func (b *jobsBundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(b.ctx, sql, args...).Scan(&n))
	return n
}

func (b *jobsBundle) holdState(t *testing.T, c call) core.HoldState {
	t.Helper()
	var state core.HoldState
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT state FROM holds WHERE id = $1", c.holdID).Scan(&state))
	return state
}

// live reports whether the call's hold is held and its slot and claim are
// still there.
func (b *jobsBundle) requireLive(t *testing.T, c call) {
	t.Helper()
	require.Equal(t, core.HoldHeld, b.holdState(t, c))
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM concurrency_slots WHERE request_id = $1", c.requestID))
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM idempotency_keys WHERE request_id = $1 AND state = 'in_flight'", c.requestID))
	require.Zero(t, b.count(t, "SELECT count(*) FROM call_outcomes WHERE request_id = $1", c.requestID))
}

func (b *jobsBundle) requireAbandoned(t *testing.T, c call) {
	t.Helper()
	require.Equal(t, core.HoldReleased, b.holdState(t, c))
	require.Zero(t, b.count(t, "SELECT count(*) FROM concurrency_slots WHERE request_id = $1", c.requestID), "the slot is free")
	require.Zero(t, b.count(t, "SELECT count(*) FROM idempotency_keys WHERE request_id = $1", c.requestID), "a retry with the key runs again")
	var endpoint, reason string
	var status core.OutcomeStatus
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT endpoint, status, reason FROM call_outcomes WHERE request_id = $1 AND org_id = $2",
		c.requestID, c.org).Scan(&endpoint, &status, &reason))
	require.Equal(t, core.OutcomeAbandonedEndpoint, endpoint)
	require.Equal(t, core.OutcomeAbandoned, status)
	require.Equal(t, core.OutcomeAbandonedReason, reason)
}

func TestSweepHoldsReleasesTheHoldsOfDeadCallsAndFreesTheirSlotsAndClaims(t *testing.T) {
	t.Parallel()
	b := setupJobs(t)
	org := b.org(t, "Sweep", 0)
	dead := b.startCall(t, org, "req_dead", 0, 2*usd, -time.Minute)
	live := b.startCall(t, org, "req_live", 1, 3*usd, 5*time.Minute)
	postingsBefore := b.count(t, "SELECT count(*) FROM postings WHERE org_id = $1", org)

	res, err := b.store.SweepHolds(b.ctx, &pgstore.SweepParams{})
	require.NoError(t, err)
	require.Equal(t, &pgstore.SweepResult{HoldsReleased: 1, Released: 2 * usd, SlotsFreed: 1, ClaimsFreed: 1, Outcomes: 1}, res)

	b.requireAbandoned(t, dead)
	b.requireLive(t, live)
	bal := b.balance(t, org)
	require.Equal(t, core.TrialCredit, bal.Balance, "nothing is billed")
	require.Equal(t, core.TrialCredit, bal.TrialRemaining)
	require.Equal(t, 3*usd, bal.Held, "only the live call's hold is held")
	require.Equal(t, postingsBefore, b.count(t, "SELECT count(*) FROM postings WHERE org_id = $1", org), "no journal entry")
	var settledAt *time.Time
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT settled_at FROM holds WHERE id = $1", dead.holdID).Scan(&settledAt))
	require.NotNil(t, settledAt)

	// A second sweep finds nothing, and the dead call's settlement, should
	// its process come back, is refused: the hold is gone.
	res, err = b.store.SweepHolds(b.ctx, &pgstore.SweepParams{})
	require.NoError(t, err)
	require.Equal(t, &pgstore.SweepResult{}, res)
	_, err = b.store.SettleCall(b.ctx, &core.SettleCallParams{HoldID: dead.holdID, OrgID: org, Billed: usd})
	require.ErrorIs(t, err, core.ErrConflict)

	// Swept as of later, the live call is dead too.
	res, err = b.store.SweepHolds(b.ctx, &pgstore.SweepParams{At: time.Now().Add(10 * time.Minute)})
	require.NoError(t, err)
	require.Equal(t, 1, res.HoldsReleased)
	b.requireAbandoned(t, live)
	require.Zero(t, b.balance(t, org).Held)
	requireHeldEqualsLiveHolds(t, b.pool)
	requireBalanceEqualsJournal(t, b.pool)
}

func TestSweepHoldsGivesLeasesTheirGrace(t *testing.T) {
	t.Parallel()
	b := setupJobs(t)
	org := b.org(t, "Grace", 0)
	late := b.startCall(t, org, "req_late", 0, usd, -30*time.Second)

	res, err := b.store.SweepHolds(b.ctx, &pgstore.SweepParams{Grace: time.Minute})
	require.NoError(t, err)
	require.Equal(t, &pgstore.SweepResult{}, res, "a renewal 30 s late is within a minute's grace")
	b.requireLive(t, late)

	res, err = b.store.SweepHolds(b.ctx, &pgstore.SweepParams{Grace: 10 * time.Second})
	require.NoError(t, err)
	require.Equal(t, 1, res.HoldsReleased)
	b.requireAbandoned(t, late)
}

// An outcome already recorded for the request (the call failed and said
// so, say) stands.
func TestSweepHoldsKeepsAnOutcomeAlreadyRecorded(t *testing.T) {
	t.Parallel()
	b := setupJobs(t)
	org := b.org(t, "Told", 0)
	c := b.startCall(t, org, "req_told", 0, usd, -time.Minute)
	_, err := b.pool.Exec(b.ctx, "INSERT INTO call_outcomes (request_id, org_id, endpoint, status, reason) VALUES ($1, $2, '/v1/chat/completions', 'failed', 'earlier')", c.requestID, org)
	require.NoError(t, err)
	res, err := b.store.SweepHolds(b.ctx, &pgstore.SweepParams{})
	require.NoError(t, err)
	require.Equal(t, 1, res.HoldsReleased)
	require.Zero(t, res.Outcomes)
	var status string
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT status FROM call_outcomes WHERE request_id = $1", c.requestID).Scan(&status))
	require.Equal(t, "failed", status)
}

// Sweepers on several replicas at once release each hold exactly once.
func TestConcurrentSweepersReleaseEachHoldOnce(t *testing.T) {
	t.Parallel()
	b := setupJobs(t)
	var orgs []string
	for i := range 3 {
		org := b.org(t, fmt.Sprintf("Crowd %c", 'A'+i), 0)
		_, err := b.store.AddFunds(b.ctx, &core.AddFundsParams{OrgID: org, Amount: 100 * usd})
		require.NoError(t, err)
		orgs = append(orgs, org)
	}
	const calls = 60
	for i := range calls {
		b.startCall(t, orgs[i%3], fmt.Sprintf("req_%02d", i), i/3, core.Micros(i+1)*10_000, -time.Minute)
	}
	results := concurrently(t, 4, func(int) (*pgstore.SweepResult, error) {
		return b.store.SweepHolds(b.ctx, &pgstore.SweepParams{})
	})
	require.False(t, t.Failed())
	var sum pgstore.SweepResult
	for _, r := range results {
		sum.HoldsReleased += r.HoldsReleased
		sum.Released += r.Released
		sum.SlotsFreed += r.SlotsFreed
		sum.ClaimsFreed += r.ClaimsFreed
		sum.Outcomes += r.Outcomes
	}
	require.Equal(t, pgstore.SweepResult{HoldsReleased: calls, Released: calls * (calls + 1) / 2 * 10_000,
		SlotsFreed: calls, ClaimsFreed: calls, Outcomes: calls}, sum)
	require.Zero(t, b.count(t, "SELECT count(*) FROM holds WHERE state = 'held'"))
	require.Equal(t, calls, b.count(t, "SELECT count(*) FROM call_outcomes WHERE status = 'abandoned'"))
	for _, org := range orgs {
		bal := b.balance(t, org)
		require.Zero(t, bal.Held)
		require.Equal(t, core.TrialCredit+100*usd, bal.Balance)
	}
	requireHeldEqualsLiveHolds(t, b.pool)
	requireBalanceEqualsJournal(t, b.pool)
}

// Expired slot and claim leases of calls that hold no money are deleted;
// those of a call with a live hold, and the claim of a call that was billed,
// are not.
func TestSweepHoldsDeletesExpiredLeasesOfCallsWithoutMoneyHeld(t *testing.T) {
	t.Parallel()
	b := setupJobs(t)
	org := b.org(t, "Leases", 0)
	insertSlot := func(slot int, requestID string, lease time.Duration) {
		_, err := b.pool.Exec(b.ctx, `INSERT INTO concurrency_slots (org_id, slot, request_id, lease_until)
			VALUES ($1, $2, $3, now() + $4 * interval '1 microsecond')`, org, slot, requestID, lease.Microseconds())
		require.NoError(t, err)
	}
	// A call that took a slot and a claim but died before placing a hold.
	insertSlot(0, "req_nohold", -time.Minute)
	b.claim(t, org, "k-nohold", "req_nohold", core.ClaimInFlight, -time.Minute, 0)
	// A live call whose slot and claim leases lapsed but whose hold is live.
	h, err := b.store.PlaceHold(b.ctx, &core.PlaceHoldParams{OrgID: org, RequestID: "req_held", Amount: usd})
	require.NoError(t, err)
	insertSlot(1, "req_held", -time.Minute)
	b.claim(t, org, "k-held", "req_held", core.ClaimInFlight, -time.Minute, 0)
	// A call that settled (was billed) but whose claim was left in flight.
	settled, err := b.store.PlaceHold(b.ctx, &core.PlaceHoldParams{OrgID: org, RequestID: "req_billed", Amount: usd})
	require.NoError(t, err)
	_, err = b.store.SettleCall(b.ctx, &core.SettleCallParams{HoldID: settled.ID, OrgID: org, Billed: 1})
	require.NoError(t, err)
	b.claim(t, org, "k-billed", "req_billed", core.ClaimInFlight, -time.Minute, 0)
	// A call that was released (failed) with its claim left in flight.
	released, err := b.store.PlaceHold(b.ctx, &core.PlaceHoldParams{OrgID: org, RequestID: "req_failed", Amount: usd})
	require.NoError(t, err)
	require.NoError(t, b.store.ReleaseHold(b.ctx, released.ID, org))
	b.claim(t, org, "k-failed", "req_failed", core.ClaimInFlight, -time.Minute, 0)
	// Unexpired leases and a finished claim.
	insertSlot(2, "req_running", time.Minute)
	b.claim(t, org, "k-running", "req_running", core.ClaimInFlight, time.Minute, 0)
	b.claim(t, org, "k-done", "req_done", core.ClaimSucceeded, -time.Hour, 0)

	res, err := b.store.SweepHolds(b.ctx, &pgstore.SweepParams{})
	require.NoError(t, err)
	require.Equal(t, &pgstore.SweepResult{SlotsFreed: 1, ClaimsFreed: 2}, res)

	slots := func(requestID string) int {
		return b.count(t, "SELECT count(*) FROM concurrency_slots WHERE request_id = $1", requestID)
	}
	claims := func(key string) int {
		return b.count(t, "SELECT count(*) FROM idempotency_keys WHERE key = $1", key)
	}
	require.Zero(t, slots("req_nohold"))
	require.Zero(t, claims("k-nohold"))
	require.Zero(t, claims("k-failed"))
	require.Equal(t, 1, slots("req_held"))
	require.Equal(t, 1, claims("k-held"))
	require.Equal(t, 1, claims("k-billed"), "deleting it would let a retry bill again")
	require.Equal(t, 1, slots("req_running"))
	require.Equal(t, 1, claims("k-running"))
	require.Equal(t, 1, claims("k-done"), "finished claims are the reaper's")
	require.Equal(t, core.HoldHeld, b.holdState(t, call{holdID: h.ID}))
}

func TestReapIdempotencyKeysDeletesFinishedClaimsPastRetention(t *testing.T) {
	t.Parallel()
	b := setupJobs(t)
	org := b.org(t, "Reaper", 0)
	for i, state := range []core.ClaimState{core.ClaimSucceeded, core.ClaimCapped, core.ClaimStopped, core.ClaimSucceeded, core.ClaimCapped} {
		b.claim(t, org, fmt.Sprintf("old-%d", i), fmt.Sprintf("req_old_%d", i), state, -25*time.Hour, 25*time.Hour)
	}
	b.claim(t, org, "recent", "req_recent", core.ClaimSucceeded, -time.Hour, time.Hour)
	b.claim(t, org, "stuck", "req_stuck", core.ClaimInFlight, -25*time.Hour, 25*time.Hour)

	n, err := b.store.ReapIdempotencyKeys(b.ctx, &pgstore.ReapParams{Retention: 24 * time.Hour, Batch: 2})
	require.NoError(t, err)
	require.Equal(t, 5, n)
	require.Zero(t, b.count(t, "SELECT count(*) FROM idempotency_keys WHERE key LIKE 'old-%'"))
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM idempotency_keys WHERE key = 'recent'"))
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM idempotency_keys WHERE key = 'stuck'"), "in-flight claims are the sweeper's")

	n, err = b.store.ReapIdempotencyKeys(b.ctx, &pgstore.ReapParams{Retention: 24 * time.Hour})
	require.NoError(t, err)
	require.Zero(t, n)
	n, err = b.store.ReapIdempotencyKeys(b.ctx, &pgstore.ReapParams{At: time.Now().Add(24 * time.Hour), Retention: 24 * time.Hour})
	require.NoError(t, err)
	require.Equal(t, 1, n, "a day later the recent one is past retention too")

	_, err = b.store.ReapIdempotencyKeys(b.ctx, &pgstore.ReapParams{})
	require.ErrorContains(t, err, "retention")
}

// The sweeper's scans read what they look for, not the tables: with many
// finished claims and settled holds and a few calls in flight, the plans of
// its statements scan neither table whole. (The reaper is left out: what it
// looks for, claims past retention, can be most of the table.)
func TestSweepScansByIndex(t *testing.T) {
	t.Parallel()
	b := setupJobs(t)
	org := b.org(t, "Busy", 0)
	// 20,000 finished claims with their settled holds, 20 claims in flight.
	_, err := b.pool.Exec(b.ctx, `
		INSERT INTO idempotency_keys (org_id, key, request_hash, request_id, state, locked_until, updated_at)
		SELECT $1, 'k' || g, sha256(g::text::bytea), 'req_' || g,
		       CASE WHEN g % 1000 = 0 THEN 'in_flight' ELSE 'succeeded' END,
		       now() - interval '1 hour', now() - g * interval '1 second'
		  FROM generate_series(1, 20000) g`, org)
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, `
		INSERT INTO holds (id, org_id, request_id, amount_micros, state, billed_micros, expires_at, settled_at)
		SELECT 'hold_' || g, $1, 'req_' || g, 1000, 'settled', 900, now() - interval '1 hour', now()
		  FROM generate_series(1, 20000) g WHERE g % 1000 <> 0`, org)
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, "ANALYZE idempotency_keys, holds, concurrency_slots")
	require.NoError(t, err)
	grace := (30 * time.Second).Microseconds()
	// The sweeper's scans, and the lookups of in-flight claims by request
	// (the sweeper's release of a dead call's claim, lease renewal).
	// concurrency_slots holds only the calls in flight and is read whole.
	type statement struct {
		sql  string
		args []any
	}
	for name, st := range map[string]statement{
		"ReleaseExpiredHold": {pgstore.JobQuery("ReleaseExpiredHold"), []any{time.Now(), grace}},
		"SweepExpiredSlots":  {pgstore.JobQuery("SweepExpiredSlots"), []any{time.Now(), grace, 1000}},
		"SweepPersonSlots":   {pgstore.JobQuery("SweepExpiredPersonSlots"), []any{time.Now(), grace, 1000}},
		"SweepExpiredClaims": {pgstore.JobQuery("SweepExpiredClaims"), []any{time.Now(), grace, 1000}},
		"FreeClaimOf":        {pgstore.JobQuery("FreeClaimOf"), []any{org, "req_5000"}},
		"RenewLeases":        {pgstore.Query("RenewLeases"), []any{[]string{"req_5000", "req_7000"}, grace}},
	} {
		rows, err := b.pool.Query(b.ctx, "EXPLAIN "+st.sql, st.args...)
		require.NoError(t, err)
		var plan strings.Builder
		for rows.Next() {
			var line string
			require.NoError(t, rows.Scan(&line))
			plan.WriteString(line + "\n")
		}
		require.NoError(t, rows.Err())
		require.NotContains(t, plan.String(), "Seq Scan on idempotency_keys", "%s:\n%s", name, plan.String())
		require.NotContains(t, plan.String(), "Seq Scan on holds", "%s:\n%s", name, plan.String())
	}
	n, err := b.store.SweepHolds(b.ctx, &pgstore.SweepParams{Grace: 30 * time.Second})
	require.NoError(t, err)
	require.Equal(t, 20, n.ClaimsFreed, "the 20 dead in-flight claims, none of the finished ones")
}

func TestMigrateRiverIsIdempotentAndSafeConcurrently(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t) // River's schema is in the template already
	var wg sync.WaitGroup
	// Each caller holds a connection for the lock and borrows another: two
	// callers fit a pool of four.
	errs := make(chan error, 2)
	for range 2 {
		wg.Go(func() { errs <- pgstore.MigrateRiver(t.Context(), pool) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, pgstore.RiverMigrationsDigest(), 64)

	// From nothing, several at once.
	empty, err := pgxpool.New(t.Context(), pgtest.NewEmptyDatabase(t))
	require.NoError(t, err)
	t.Cleanup(empty.Close)
	errs = make(chan error, 2)
	for range 2 {
		wg.Go(func() { errs <- pgstore.MigrateRiver(t.Context(), empty) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	var exists bool
	require.NoError(t, empty.QueryRow(t.Context(), "SELECT to_regclass('river_job') IS NOT NULL").Scan(&exists))
	require.True(t, exists)
}
