package pgstore_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

// takeRate, acquireSlot and claimKey run admit_call with one check each.
func takeRate(ctx context.Context, s *pgstore.Store, keyID string, perMinute int) (bool, time.Duration, error) {
	a, err := s.Admit(ctx, &core.AdmitParams{KeyID: keyID, PerMinute: perMinute})
	if err != nil {
		return false, 0, err
	}
	return a.Refused == nil, a.RetryAfter, nil
}

func acquireSlot(ctx context.Context, s *pgstore.Store, orgID, requestID string, limit int, lease time.Duration) (bool, error) {
	a, err := s.Admit(ctx, &core.AdmitParams{OrgID: orgID, RequestID: requestID, SlotLimit: limit, Lease: lease})
	if err != nil {
		return false, err
	}
	return a.Refused == nil, nil
}

// claimKey reports whether the call won the claim, and when it did not, the
// holder's claim.
func claimKey(ctx context.Context, s *pgstore.Store, p core.AdmitParams) (won bool, holder *core.Claim, err error) {
	a, err := s.Admit(ctx, &p)
	if err != nil {
		return false, nil, err
	}
	if a.Refused == nil {
		return true, nil, nil
	}
	if !errors.Is(a.Refused, core.ErrClaimed) || a.Claim == nil {
		return false, nil, fmt.Errorf("refused with %v and holder %v, want ErrClaimed and its holder", a.Refused, a.Claim)
	}
	return false, a.Claim, nil
}

// concurrently runs f(0) … f(n-1) at once and returns what each returned,
// in order of i; an error fails the test.
func concurrently[T any](t *testing.T, n int, f func(i int) (T, error)) []T {
	t.Helper()
	out := make([]T, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			v, err := f(i)
			if err != nil {
				t.Errorf("call %d: %v", i, err)
				return
			}
			out[i] = v
		})
	}
	wg.Wait()
	return out
}

// wins runs n attempts at once (concurrently) and counts those that won.
func wins(t *testing.T, n int, try func(i int) (bool, error)) int {
	t.Helper()
	won := 0
	for _, ok := range concurrently(t, n, try) {
		if ok {
			won++
		}
	}
	return won
}

func newAdmissionStore(t *testing.T) (*pgstore.Store, *pgxpool.Pool, *core.Org) {
	t.Helper()
	pool := pgtest.NewPool(t)
	s := pgstore.New(pool)
	org, _, err := s.CreateOrg(context.Background(), &core.CreateOrgParams{Name: "Admission"})
	require.NoError(t, err)
	return s, pool, org
}

// Concurrent requests on one key from many connections: exactly the budget
// is admitted.
func TestTakeRateIsExactUnderConcurrency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, _ := newAdmissionStore(t)
	admitted := wins(t, 40, func(int) (bool, error) {
		ok, _, err := takeRate(ctx, s, "key_c", 25)
		return ok, err
	})
	require.Equal(t, 25, admitted)
}

// Slots: the limit is exact under concurrency, a released slot is taken
// again, and a lapsed lease frees its slot by itself.
func TestConcurrencySlots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool, org := newAdmissionStore(t)
	won := wins(t, 20, func(i int) (bool, error) {
		return acquireSlot(ctx, s, org.ID, fmt.Sprintf("req_%d", i), 5, time.Minute)
	})
	require.Equal(t, 5, won, "exactly the limit of 5 slots is leased")
	ok, err := acquireSlot(ctx, s, org.ID, "req_more", 5, time.Minute)
	require.NoError(t, err)
	require.False(t, ok)

	var holder string
	require.NoError(t, pool.QueryRow(ctx, "SELECT request_id FROM concurrency_slots WHERE org_id = $1 LIMIT 1", org.ID).Scan(&holder))
	require.NoError(t, s.ReleaseSlot(ctx, org.ID, holder))
	require.NoError(t, s.ReleaseSlot(ctx, org.ID, holder), "releasing twice is harmless")
	ok, err = acquireSlot(ctx, s, org.ID, "req_next", 5, time.Minute)
	require.NoError(t, err)
	require.True(t, ok, "a released slot is free")

	// A lapsed lease: the call's process died and stopped renewing.
	_, err = pool.Exec(ctx, "UPDATE concurrency_slots SET lease_until = now() - interval '1 second' WHERE org_id = $1 AND request_id = 'req_next'", org.ID)
	require.NoError(t, err)
	ok, err = acquireSlot(ctx, s, org.ID, "req_after_crash", 5, time.Minute)
	require.NoError(t, err)
	require.True(t, ok, "a lapsed lease frees its slot")
	var n int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM concurrency_slots WHERE org_id = $1", org.ID).Scan(&n))
	require.Equal(t, 5, n)
}

func hashOf(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// A claim whose in-flight lease lapsed (its call's process died and
// stopped renewing) is taken by the next call with the key. (The claim's
// other moves are storetest's.)
func TestIdempotencyClaimWithALapsedLeaseIsTakenAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool, org := newAdmissionStore(t)
	claim := func(requestID string) (bool, *core.Claim) {
		t.Helper()
		won, c, err := claimKey(ctx, s, core.AdmitParams{OrgID: org.ID, IdempotencyKey: "k", RequestHash: hashOf(requestID),
			RequestID: requestID, Lease: time.Minute})
		require.NoError(t, err)
		return won, c
	}
	won, _ := claim("req_1")
	require.True(t, won)
	won, c := claim("req_2")
	require.False(t, won)
	require.Equal(t, "req_1", c.RequestID)
	_, err := pool.Exec(ctx, "UPDATE idempotency_keys SET locked_until = now() - interval '1 second' WHERE key = 'k'")
	require.NoError(t, err)
	won, _ = claim("req_3")
	require.True(t, won, "a lapsed in-flight lease is claimed again")
}

// Many concurrent claims of one key: exactly one wins.
func TestIdempotencyClaimIsAtomic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, org := newAdmissionStore(t)
	won := wins(t, 30, func(i int) (bool, error) {
		won, _, err := claimKey(ctx, s, core.AdmitParams{OrgID: org.ID, IdempotencyKey: "same", RequestHash: hashOf("b"), RequestID: fmt.Sprintf("req_%d", i), Lease: time.Minute})
		return won, err
	})
	require.Equal(t, 1, won)
}

// Renewing moves every lease of a live call; a call that is not renewed
// keeps its old expiry.
func TestRenewLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool, org := newAdmissionStore(t)
	for _, id := range []string{"req_live", "req_dead"} {
		ok, err := acquireSlot(ctx, s, org.ID, id, 5, time.Second)
		require.NoError(t, err)
		require.True(t, ok)
		won, _, err := claimKey(ctx, s, core.AdmitParams{OrgID: org.ID, IdempotencyKey: id, RequestHash: hashOf(id), RequestID: id, Lease: time.Second})
		require.NoError(t, err)
		require.True(t, won)
		_, err = s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: id, Amount: 1_000, TTL: time.Second})
		require.NoError(t, err)
	}
	require.NoError(t, s.RenewLeases(ctx, []string{"req_live"}, time.Hour))
	for _, tc := range []struct{ table, col, where string }{
		{"holds", "expires_at", "request_id = $1"},
		{"concurrency_slots", "lease_until", "request_id = $1"},
		{"idempotency_keys", "locked_until", "request_id = $1"},
	} {
		var live, dead bool
		query := "SELECT " + tc.col + " > now() + interval '30 minutes' FROM " + tc.table + " WHERE " + tc.where
		require.NoError(t, pool.QueryRow(ctx, query, "req_live").Scan(&live))
		require.NoError(t, pool.QueryRow(ctx, query, "req_dead").Scan(&dead))
		require.True(t, live, "%s.%s of the live call moved", tc.table, tc.col)
		require.False(t, dead, "%s.%s of the other call stayed", tc.table, tc.col)
	}
}

// Spend rules at the hold: the monthly quota counts settled bills and live
// holds; the activation allowance binds only when asked (unverified
// organisations); an organisation with no money source left is told apart
// from a short one.
func TestHoldSpendRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool, org := newAdmissionStore(t)
	quota := core.Micros(3_000_000)
	h1, err := s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_q1", Amount: 2_000_000, MonthlyQuota: &quota})
	require.NoError(t, err)
	_, err = s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_q2", Amount: 2_000_000, MonthlyQuota: &quota})
	require.ErrorIs(t, err, core.ErrQuotaExceeded, "a live $2 hold and a new $2 one pass a $3 quota")
	_, err = s.SettleCall(ctx, &core.SettleCallParams{HoldID: h1.ID, OrgID: org.ID, Billed: 500_000})
	require.NoError(t, err)
	_, err = s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_q3", Amount: 2_000_000, MonthlyQuota: &quota})
	require.NoError(t, err, "settled at $0.50: $2.50 of $3 fits")

	_, err = s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_a1", Amount: 2_000_000, ActivationAllowance: 4_000_000})
	require.ErrorIs(t, err, core.ErrVerificationRequired, "$2.50 spent and held, $2 more passes a $4 allowance")
	_, err = s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_a2", Amount: 1_000_000, ActivationAllowance: 4_000_000})
	require.NoError(t, err)

	// Trial over and never topped up: no billing configured.
	broke, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Broke"})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "UPDATE balances SET trial_expired_at = now() WHERE org_id = $1", broke.ID)
	require.NoError(t, err)
	_, err = s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: broke.ID, RequestID: "req_b1", Amount: 20_000_000})
	require.ErrorIs(t, err, core.ErrInsufficientFunds, "trial credit is still there")
	require.NotErrorIs(t, err, core.ErrNoBilling)
	_, err = pool.Exec(ctx, `UPDATE balances SET balance_micros = 0, trial_remaining_micros = 0 WHERE org_id = $1`, broke.ID)
	require.NoError(t, err)
	_, err = s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: broke.ID, RequestID: "req_b2", Amount: 1_000})
	require.ErrorIs(t, err, core.ErrNoBilling)
	_, err = s.AddFunds(ctx, &core.AddFundsParams{OrgID: broke.ID, Amount: 500, Memo: "top-up"})
	require.NoError(t, err)
	_, err = s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: broke.ID, RequestID: "req_b3", Amount: 1_000})
	require.ErrorIs(t, err, core.ErrInsufficientFunds)
	require.NotErrorIs(t, err, core.ErrNoBilling, "a topped-up organisation has billing set up")
}

// A call whose claim lapsed and was taken by a repeat cannot bill: the
// repeat bills instead, so the key is billed once.
func TestSettleRefusesALostClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool, org := newAdmissionStore(t)
	won, _, err := claimKey(ctx, s, core.AdmitParams{OrgID: org.ID, IdempotencyKey: "k", RequestHash: hashOf("a"), RequestID: "req_slow", Lease: time.Minute})
	require.NoError(t, err)
	require.True(t, won)
	hold, err := s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_slow", Amount: 1_000})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "UPDATE idempotency_keys SET locked_until = now() - interval '1 second'")
	require.NoError(t, err)
	won, _, err = claimKey(ctx, s, core.AdmitParams{OrgID: org.ID, IdempotencyKey: "k", RequestHash: hashOf("b"), RequestID: "req_repeat", Lease: time.Minute})
	require.NoError(t, err)
	require.True(t, won)
	_, err = s.SettleCall(ctx, &core.SettleCallParams{HoldID: hold.ID, OrgID: org.ID, Billed: 700, IdempotencyKey: "k", ClaimState: core.ClaimSucceeded})
	require.ErrorIs(t, err, core.ErrConflict)
	bal, err := s.GetBalance(ctx, org.ID)
	require.NoError(t, err)
	require.Equal(t, core.TrialCredit, bal.Balance, "nothing charged")
	require.Equal(t, core.Micros(1_000), bal.Held, "the hold is still there to release")
}

// A large limit: slots are leased by random probes and the count is still
// exact; a full small range falls back to the scan.
func TestConcurrencySlotsWithALargeLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool, org := newAdmissionStore(t)
	won := wins(t, 50, func(i int) (bool, error) {
		return acquireSlot(ctx, s, org.ID, fmt.Sprintf("req_%d", i), 1_000_000, time.Minute)
	})
	require.Equal(t, 50, won, "a million slots hold fifty calls")
	// 100 slots, 50 of them taken at random: fill the rest exactly.
	_, err := pool.Exec(ctx, "DELETE FROM concurrency_slots")
	require.NoError(t, err)
	won = wins(t, 130, func(i int) (bool, error) {
		return acquireSlot(ctx, s, org.ID, fmt.Sprintf("req_b%d", i), 100, time.Minute)
	})
	require.Equal(t, 100, won, "exactly the limit of 100")
}

// A call that finds every slot taken locks none of them: its probes of
// taken slots leave no row lock behind until its transaction ends, so two
// calls probing each other's slots cannot deadlock.
func TestRefusedSlotProbesLockNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool, org := newAdmissionStore(t)
	const limit = 65 // above 64: random probes of taken slots first
	for i := range limit {
		ok, err := acquireSlot(ctx, s, org.ID, fmt.Sprintf("req_%d", i), limit, time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
	}
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck // the transaction is only looked at
	var outcome string
	require.NoError(t, tx.QueryRow(ctx, `SELECT outcome FROM admit_call('', 0, 0, $1, 'req_late', $2, 60000000, '', ''::bytea, '', 0, NULL, 0, now())`,
		org.ID, limit).Scan(&outcome))
	require.Equal(t, "no_slot", outcome)
	var free int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM concurrency_slots WHERE org_id = $1 FOR UPDATE SKIP LOCKED) s`,
		org.ID).Scan(&free))
	require.Equal(t, limit, free, "the refused call's open transaction locks no slot")
}

// admit_call commits without waiting for the disk, in its own transaction
// only: the session's next transaction (a settlement, say) waits again.
func TestAdmitCommitsAsynchronouslyInItsTransactionOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, pool, org := newAdmissionStore(t)
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	admit := `SELECT outcome FROM admit_call('key_a', 0, 0, $1, $2, 0, 60000000, '', ''::bytea, $3, 1000, NULL, 0, now())`
	setting := func() string {
		var v string
		require.NoError(t, conn.QueryRow(ctx, "SHOW synchronous_commit").Scan(&v))
		return v
	}
	require.Equal(t, "on", setting())

	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	var outcome string
	require.NoError(t, tx.QueryRow(ctx, admit, org.ID, "req_in_tx", "hold_in_tx").Scan(&outcome))
	require.Equal(t, "ok", outcome)
	var inTx string
	require.NoError(t, tx.QueryRow(ctx, "SHOW synchronous_commit").Scan(&inTx))
	require.Equal(t, "off", inTx, "the admission's transaction commits asynchronously")
	require.NoError(t, tx.Rollback(ctx))
	require.Equal(t, "on", setting(), "the next transaction commits synchronously again")

	require.NoError(t, conn.QueryRow(ctx, admit, org.ID, "req_alone", "hold_alone").Scan(&outcome))
	require.Equal(t, "ok", outcome)
	require.Equal(t, "on", setting())
}

// admit_call writes the call's own rows (slot, claim, hold) before the
// shared rate and balance rows. A call refused at the rate it read as free
// but lost to a concurrent call when it took it, or refused by the balance
// after its hold was written, keeps none of them, and the balance holds
// nothing for it.
func TestAdmitRefusedAfterItsOwnRowsKeepsNone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool, org := newAdmissionStore(t)
	leftovers := func(requestID string) (rows int, held int64) {
		t.Helper()
		require.NoError(t, pool.QueryRow(ctx, `SELECT
			  (SELECT count(*) FROM concurrency_slots WHERE request_id = $1)
			+ (SELECT count(*) FROM idempotency_keys WHERE request_id = $1)
			+ (SELECT count(*) FROM holds WHERE request_id = $1),
			  (SELECT held_micros FROM balances WHERE org_id = $2)`, requestID, org.ID).Scan(&rows, &held))
		return rows, held
	}
	admit := func(requestID string, amount core.Micros) (*core.AdmitResult, error) {
		return s.Admit(ctx, &core.AdmitParams{KeyID: "key_race", PerMinute: 1, OrgID: org.ID, RequestID: requestID,
			SlotLimit: 5, Lease: time.Minute, IdempotencyKey: "idem-" + requestID, RequestHash: hashOf(requestID),
			Hold: core.PlaceHoldParams{Amount: amount}})
	}

	// The rate: another transaction spends the key's minute and keeps its
	// row locked; the admission reads the rate as free, writes its rows,
	// waits for the row, and finds the minute spent once the other commits.
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	_, err = tx.Exec(ctx, `INSERT INTO rate_limits (key_id, tat) VALUES ('key_race', clock_timestamp() + interval '1 minute')`)
	require.NoError(t, err)
	type result struct {
		a   *core.AdmitResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		a, err := admit("req_race", 1_000_000)
		done <- result{a, err}
	}()
	// Wait until the admission waits for the rate row, with its rows written.
	require.Eventually(t, func() bool {
		var waiting bool
		err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%admit_call%')`).Scan(&waiting)
		return err == nil && waiting
	}, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, tx.Commit(ctx))
	r := <-done
	require.NoError(t, r.err)
	require.ErrorIs(t, r.a.Refused, core.ErrRateLimited)
	require.Greater(t, r.a.RetryAfter, 50*time.Second, "the other transaction spent the minute")
	require.Nil(t, r.a.Hold)
	rows, held := leftovers("req_race")
	require.Zero(t, rows, "no slot, claim or hold is kept")
	require.Zero(t, held)

	// The balance: more than the organisation has.
	_, err = pool.Exec(ctx, `DELETE FROM rate_limits WHERE key_id = 'key_race'`)
	require.NoError(t, err)
	a, err := admit("req_broke", 1_000_000_000)
	require.NoError(t, err)
	require.ErrorIs(t, a.Refused, core.ErrInsufficientFunds)
	require.Nil(t, a.Hold)
	rows, held = leftovers("req_broke")
	require.Zero(t, rows, "no slot, claim or hold is kept")
	require.Zero(t, held)

	// The same call, affordable, is admitted with all three.
	_, err = pool.Exec(ctx, `DELETE FROM rate_limits WHERE key_id = 'key_race'`)
	require.NoError(t, err)
	a, err = admit("req_ok", 1_000_000)
	require.NoError(t, err)
	require.NoError(t, a.Refused)
	require.NotNil(t, a.Hold)
	rows, held = leftovers("req_ok")
	require.Equal(t, 3, rows, "a slot, a claim and a hold")
	require.Equal(t, int64(1_000_000), held)
}

// The rate is read before anything is written, so a key over its rate is
// refused for its rate even when the organisation has no slot free either,
// and writes nothing.
func TestAdmitRefusesTheRateBeforeTheSlot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool, org := newAdmissionStore(t)
	admit := func(requestID string) *core.AdmitResult {
		t.Helper()
		a, err := s.Admit(ctx, &core.AdmitParams{KeyID: "key_order", PerMinute: 1, OrgID: org.ID, RequestID: requestID,
			SlotLimit: 1, Lease: time.Minute, IdempotencyKey: "idem-" + requestID, RequestHash: hashOf(requestID)})
		require.NoError(t, err)
		return a
	}
	require.NoError(t, admit("req_first").Refused, "the minute's one call, holding the one slot")
	a := admit("req_second")
	require.ErrorIs(t, a.Refused, core.ErrRateLimited, "over the rate and without a slot: the rate is named")
	require.Greater(t, a.RetryAfter, 50*time.Second)
	var rows int
	require.NoError(t, pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM concurrency_slots WHERE request_id = 'req_second')
		+ (SELECT count(*) FROM idempotency_keys WHERE request_id = 'req_second')`).Scan(&rows))
	require.Zero(t, rows)
}

// Slot leases are unlogged (0011): PostgreSQL empties the table when it
// recovers from a crash. A call whose slot went that way still settles,
// billed once, with its claim and receipt; its slot is free for the next
// call meanwhile, and the money rows are all kept.
func TestSlotsLostWithACrashLeaveCallsWhole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool, org := newAdmissionStore(t)
	var persistence string
	require.NoError(t, pool.QueryRow(ctx, `
		SELECT string_agg(relname || '=' || relpersistence::text, ' ' ORDER BY relname) FROM pg_class
		 WHERE relname IN ('concurrency_slots', 'holds', 'idempotency_keys', 'balances')`).Scan(&persistence))
	require.Equal(t, "balances=p concurrency_slots=u holds=p idempotency_keys=p", persistence,
		"only the slot leases are lost with a crash")

	a, err := s.Admit(ctx, &core.AdmitParams{OrgID: org.ID, RequestID: "req_before", SlotLimit: 1, Lease: time.Minute,
		IdempotencyKey: "k_before", RequestHash: hashOf("before"), Hold: core.PlaceHoldParams{Amount: 100_000}})
	require.NoError(t, err)
	require.Nil(t, a.Refused)
	// What crash recovery does to an unlogged table.
	_, err = pool.Exec(ctx, "TRUNCATE concurrency_slots")
	require.NoError(t, err)

	b, err := s.Admit(ctx, &core.AdmitParams{OrgID: org.ID, RequestID: "req_after", SlotLimit: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Nil(t, b.Refused, "the lost slot is free")

	r := benchReceipt("req_before")
	bal, err := s.SettleCall(ctx, &core.SettleCallParams{HoldID: a.Hold.ID, OrgID: org.ID, Billed: r.Billed, Receipt: r,
		IdempotencyKey: "k_before", ClaimState: core.ClaimSucceeded})
	require.NoError(t, err)
	require.Equal(t, core.TrialCredit-r.Billed, bal.Balance, "billed once")
	require.Zero(t, bal.Held)
	_, err = s.SettleCall(ctx, &core.SettleCallParams{HoldID: a.Hold.ID, OrgID: org.ID, Billed: r.Billed, Receipt: r,
		IdempotencyKey: "k_before", ClaimState: core.ClaimSucceeded})
	require.ErrorIs(t, err, core.ErrConflict, "and never twice")
	got, err := s.GetReceipt(ctx, org.ID, "req_before")
	require.NoError(t, err)
	require.Equal(t, r.Billed, got.Billed)
	var slots int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM concurrency_slots WHERE request_id = 'req_before'").Scan(&slots))
	require.Zero(t, slots)
}

// A rate lease takes as many requests as the key's budget holds, up to
// what is asked, and moves the key's state as that many admissions would:
// an admission then finds the budget spent. What is given back is free
// again. Concurrent leases never grant more than the budget between them.
func TestLeaseRate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, _ := newAdmissionStore(t)

	granted, wait, err := s.LeaseRate(ctx, "key_l", 60, 100, 0)
	require.NoError(t, err)
	require.Equal(t, 60, granted, "the whole minute's budget, no more")
	require.Zero(t, wait)
	ok, _, err := takeRate(ctx, s, "key_l", 60)
	require.NoError(t, err)
	require.False(t, ok, "an admission finds the leased budget spent")
	granted, wait, err = s.LeaseRate(ctx, "key_l", 60, 5, 0)
	require.NoError(t, err)
	require.Zero(t, granted)
	require.Greater(t, wait, time.Duration(0))
	require.LessOrEqual(t, wait, time.Second, "the next request fits within one emission interval")

	// Ten requests' worth given back are ten requests free again.
	granted, _, err = s.LeaseRate(ctx, "key_l", 60, 20, 10)
	require.NoError(t, err)
	require.InDelta(t, 10, granted, 1, "the ten given back, and at most the one earned meanwhile")

	won := 0
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, _, err := s.LeaseRate(ctx, "key_m", 120, 16, 0)
			require.NoError(t, err)
			mu.Lock()
			won += g
			mu.Unlock()
		}()
	}
	wg.Wait()
	require.InDelta(t, 120, won, 1, "12 leases of 16 share a budget of 120")

	_, _, err = s.LeaseRate(ctx, "key_n", 0, 1, 0)
	require.Error(t, err, "no rate, no lease")
}
