package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

// replicas returns n stores, each on its own pool of one database: n
// replicas of Conclave sharing their PostgreSQL.
func replicas(t *testing.T, n int) []*pgstore.Store {
	t.Helper()
	url := pgtest.NewDatabase(t)
	out := make([]*pgstore.Store, n)
	for i := range out {
		pool, err := pgxpool.New(t.Context(), url)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		out[i] = pgstore.New(pool)
	}
	return out
}

// A person's calls in flight and their allowance are counted in
// PostgreSQL, so they bind the person across replicas: a slot taken on one
// refuses the person's next call on the other until it is given back
// there, and the allowance one replica's hold took is gone for the other.
func TestPlanLimitsHoldAcrossReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rs := replicas(t, 2)
	a, b := rs[0], rs[1]
	org, _, err := a.CreateOrg(ctx, &core.CreateOrgParams{Name: "Two Replicas"})
	require.NoError(t, err)
	allowance := core.Micros(1_000_000)
	call := func(s *pgstore.Store, requestID string, least core.Micros) *core.AdmitResult {
		t.Helper()
		res, err := s.Admit(ctx, &core.AdmitParams{OrgID: org.ID, RequestID: requestID, SlotLimit: 5, Lease: time.Minute,
			Hold: core.PlaceHoldParams{Amount: 700_000}, PersonID: "person_a", PersonSlots: 1, PersonAllowance: &allowance,
			MinHold: least})
		require.NoError(t, err)
		return res
	}
	first := call(a, "req_a", 0)
	require.NoError(t, first.Refused)
	require.ErrorIs(t, call(b, "req_b", 0).Refused, core.ErrPersonBusy, "the slot taken on replica a")
	require.NoError(t, a.ReleaseSlot(ctx, org.ID, "req_a"))
	second := call(b, "req_b", 0)
	require.NoError(t, second.Refused, "given back on replica a, the slot is free on replica b")
	require.Equal(t, core.Micros(300_000), second.Hold.Amount, "replica a's hold took $0.70 of the $1 allowance")
	_, err = a.SettleCall(ctx, &core.SettleCallParams{HoldID: second.Hold.ID, OrgID: org.ID, Billed: 200_000})
	require.NoError(t, err, "a hold placed on one replica settles on the other")
	third := call(a, "req_c", 0)
	require.NoError(t, third.Refused, "settled on replica a, replica b's call gave its slot back")
	require.Equal(t, core.Micros(100_000), third.Hold.Amount, "$0.70 held and $0.20 billed: $0.10 left")
	require.ErrorIs(t, call(b, "req_d", 0).Refused, core.ErrPersonBusy)
	require.NoError(t, a.ReleaseHold(ctx, third.Hold.ID, org.ID))
	fourth := call(b, "req_d", 150_000)
	require.ErrorIs(t, fourth.Refused, core.ErrPlanLimit, "the slot is free, the allowance is not: $0.70 held, $0.20 billed, $0.10 left, under the least")
}

// The allowance counts the calendar month (UTC): what the person spent
// before this month's first is not counted.
func TestAllowanceCountsThisMonthOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	s := pgstore.New(pool)
	org, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Monthly"})
	require.NoError(t, err)
	allowance := core.Micros(1_000_000)
	call := func(requestID string) *core.AdmitResult {
		t.Helper()
		res, err := s.Admit(ctx, &core.AdmitParams{OrgID: org.ID, RequestID: requestID, Lease: time.Minute,
			Hold: core.PlaceHoldParams{Amount: 1_000_000}, PersonID: "person_a", PersonAllowance: &allowance, MinHold: 200_000})
		require.NoError(t, err)
		return res
	}
	last := call("req_last_month")
	require.NoError(t, last.Refused)
	_, err = s.SettleCall(ctx, &core.SettleCallParams{HoldID: last.Hold.ID, OrgID: org.ID, Billed: 900_000})
	require.NoError(t, err)
	require.ErrorIs(t, call("req_now").Refused, core.ErrPlanLimit, "$0.90 of $1 spent: what is left is under the least hold")
	_, err = pool.Exec(ctx, `UPDATE holds SET created_at = date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '1 second'
		WHERE request_id = 'req_last_month'`)
	require.NoError(t, err)
	now := call("req_now")
	require.NoError(t, now.Refused)
	require.Equal(t, allowance, now.Hold.Amount, "last month's spend is not counted")
}

// A person's slot whose lease ended with no live hold (its call died
// before placing one) is deleted by the sweeper, as the organisation's
// slots are; one whose call holds money, or whose lease runs, is kept.
func TestSweepHoldsFreesExpiredPersonSlots(t *testing.T) {
	t.Parallel()
	b := setupJobs(t)
	org := b.org(t, "Person Leases", 0)
	insert := func(slot int, requestID string, lease time.Duration) {
		t.Helper()
		_, err := b.pool.Exec(b.ctx, `INSERT INTO person_slots (org_id, person_id, slot, request_id, lease_until)
			VALUES ($1, 'person_a', $2, $3, now() + $4 * interval '1 microsecond')`, org, slot, requestID, lease.Microseconds())
		require.NoError(t, err)
	}
	insert(0, "req_dead", -time.Minute)
	_, err := b.store.PlaceHold(b.ctx, &core.PlaceHoldParams{OrgID: org, RequestID: "req_held", Amount: usd})
	require.NoError(t, err)
	insert(1, "req_held", -time.Minute)
	insert(2, "req_running", time.Minute)

	res, err := b.store.SweepHolds(b.ctx, &pgstore.SweepParams{})
	require.NoError(t, err)
	require.Equal(t, 1, res.SlotsFreed)
	slots := func(requestID string) int {
		return b.count(t, "SELECT count(*) FROM person_slots WHERE request_id = $1", requestID)
	}
	require.Zero(t, slots("req_dead"))
	require.Equal(t, 1, slots("req_held"), "its call holds money: the hold's sweep frees it")
	require.Equal(t, 1, slots("req_running"))
}

// A hold the sweeper releases (its process died) gives back its person's
// slot with its organisation's, in the same transaction.
func TestSweptHoldFreesItsPersonsSlot(t *testing.T) {
	t.Parallel()
	b := setupJobs(t)
	org := b.org(t, "Dead Call", 0)
	allowance := core.USD(1)
	a, err := b.store.Admit(b.ctx, &core.AdmitParams{OrgID: org, RequestID: "req_dead", SlotLimit: 5, Lease: time.Millisecond,
		Hold: core.PlaceHoldParams{Amount: usd / 10}, PersonID: "person_a", PersonSlots: 1, PersonAllowance: &allowance})
	require.NoError(t, err)
	require.NoError(t, a.Refused)
	time.Sleep(5 * time.Millisecond)
	res, err := b.store.SweepHolds(b.ctx, &pgstore.SweepParams{})
	require.NoError(t, err)
	require.Equal(t, 1, res.HoldsReleased)
	require.Zero(t, b.count(t, "SELECT count(*) FROM person_slots WHERE request_id = 'req_dead'"))
	require.Zero(t, b.balance(t, org).Held)
}
