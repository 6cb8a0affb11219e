package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

// The database itself refuses a settlement above the hold and a receipt whose
// parts do not add up to its bill, whatever the Go code does.
func TestHoldRulesAreEnforcedByTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	s := pgstore.New(pool)
	org, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Holder"})
	require.NoError(t, err)
	h, err := s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_db", Amount: 1_000})
	require.NoError(t, err)

	_, err = pool.Exec(ctx, "UPDATE holds SET state = 'settled', billed_micros = 1001, settled_at = now() WHERE id = $1", h.ID)
	require.ErrorContains(t, err, "billed_within_hold")
	_, err = pool.Exec(ctx, "UPDATE holds SET state = 'settled', settled_at = now() WHERE id = $1", h.ID)
	require.ErrorContains(t, err, "billed_only_when_settled")
	_, err = pool.Exec(ctx, "INSERT INTO holds (id, org_id, request_id, amount_micros, expires_at) VALUES ('h0', $1, 'req_zero', 0, now())", org.ID)
	require.ErrorContains(t, err, "holds_amount_micros_check")
	_, err = pool.Exec(ctx, `INSERT INTO receipts (request_id, org_id, mode_id, mode_key, mode_config_hash, status,
		billed_micros, token_charge_micros, surcharge_micros, platform_fee_micros, prompt_tokens, completion_tokens, seat_count, payer)
		VALUES ('req_db', $1, 'm', 'm', 'h', 'completed', 10, 5, 1, 1, 0, 0, 0, 'org')`, org.ID)
	require.ErrorContains(t, err, "bill_adds_up")
	requireHeldEqualsLiveHolds(t, pool)
}

// A settlement whose receipt names another request than the hold's is
// refused whole: nothing billed, no receipt, the hold still live.
func TestSettleRefusesAReceiptForAnotherRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool, org := newRailsStore(t)
	h, err := s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_mine", Amount: 100_000})
	require.NoError(t, err)
	r := benchReceipt("req_other")
	_, err = s.SettleCall(ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: org.ID, Billed: r.Billed, Receipt: r})
	require.ErrorContains(t, err, "is for request req_mine, not req_other")
	bal, err := s.GetBalance(ctx, org.ID)
	require.NoError(t, err)
	require.Equal(t, core.TrialCredit, bal.Balance, "nothing billed")
	require.Equal(t, core.Micros(100_000), bal.Held, "the hold is still live")
	var receipts int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM receipts").Scan(&receipts))
	require.Zero(t, receipts)
}

// A settlement repeated with its receipt (written before settle_call, so
// the receipt's key is what refuses it) is a conflict naming the hold's
// state, and bills nothing more.
func TestSettleWithAReceiptTwiceBillsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool, org := newRailsStore(t)
	h, err := s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_twice", Amount: 100_000})
	require.NoError(t, err)
	r := benchReceipt("req_twice")
	settle := func() error {
		_, err := s.SettleCall(ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: org.ID, Billed: r.Billed, Receipt: r})
		return err
	}
	require.NoError(t, settle())
	err = settle()
	require.ErrorIs(t, err, core.ErrConflict)
	require.ErrorContains(t, err, "hold is settled")
	bal, err := s.GetBalance(ctx, org.ID)
	require.NoError(t, err)
	require.Equal(t, core.TrialCredit-r.Billed, bal.Balance, "billed once")
	require.Zero(t, bal.Held)
	var receipts, postings int
	require.NoError(t, pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM receipts), (SELECT count(*) FROM postings WHERE kind = 'call_charge')").
		Scan(&receipts, &postings))
	require.Equal(t, 1, receipts)
	require.Equal(t, 1, postings)
}

// Under a mix of concurrent holds, settlements and releases on a few
// organisations, every balance's held amount stays the sum of its live holds
// and every balance equals its journal.
func TestHeldEqualsLiveHoldsUnderConcurrency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	s := pgstore.New(pool)
	var orgs []string
	for range 3 {
		org, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Busy"})
		require.NoError(t, err)
		orgs = append(orgs, org.ID)
	}
	var wg sync.WaitGroup
	for w := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			orgID := orgs[w%len(orgs)]
			for i := range 6 {
				h, err := s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: orgID, RequestID: fmt.Sprintf("req_%d_%d", w, i), Amount: 400_000})
				if err != nil {
					if !errors.Is(err, core.ErrInsufficientFunds) {
						t.Error(err)
					}
					continue
				}
				switch i % 3 {
				case 0:
					errorIsNil(t, s.ReleaseHold(ctx, h.ID, orgID))
				case 1:
					_, err = s.SettleCall(ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: orgID, Billed: core.Micros(1_000 * (w + 1))})
					errorIsNil(t, err)
				default: // left in flight
				}
			}
		}()
	}
	wg.Wait()
	requireHeldEqualsLiveHolds(t, pool)
	requireBalanceEqualsJournal(t, pool)
}

func requireHeldEqualsLiveHolds(t *testing.T, pool interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) {
	t.Helper()
	var mismatched int
	require.NoError(t, pool.QueryRow(context.Background(), `
		SELECT count(*) FROM balances b
		 WHERE b.held_micros <> coalesce((SELECT sum(amount_micros) FROM holds h
		                                   WHERE h.org_id = b.org_id AND h.state = 'held'), 0)`).Scan(&mismatched))
	require.Zero(t, mismatched, "balances whose held amount differs from their live holds")
}
