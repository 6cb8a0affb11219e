package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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
	s, pool, org := newAdmissionStore(t)
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
	s, pool, org := newAdmissionStore(t)
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

// poolMigratedTo is a pool on a new database whose schema is the embedded
// migrations up to version and no further: the rows a test writes there
// are what an earlier release kept, for a later migration to carry over.
func poolMigratedTo(t *testing.T, version int) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), pgtest.NewEmptyDatabase(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, pgstore.MigrateTo(context.Background(), pool, version))
	return pool
}

// orgBefore is an organisation written on a database migrated only part
// of the way (poolMigratedTo), as a row of the first migration's columns:
// the store's own queries read and write today's.
func orgBefore(t *testing.T, pool *pgxpool.Pool) *core.Org {
	t.Helper()
	o := &core.Org{ID: core.NewID("org"), Name: "Before", Ticker: "BFOR"}
	_, err := pool.Exec(context.Background(), "INSERT INTO orgs (id, name, ticker) VALUES ($1, $2, $3)", o.ID, o.Name, o.Ticker)
	require.NoError(t, err)
	return o
}

// Migration 0012 moves every receipt's calls from receipt_calls into the
// receipt's row: a receipt kept before it reads back the same, its seats
// and staff each in order, with every field, nulls included.
func TestReceiptCallsSurviveTheirMove(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := poolMigratedTo(t, 11)
	s := pgstore.New(pool)
	org := orgBefore(t, pool)

	_, err := pool.Exec(ctx, `INSERT INTO receipts (request_id, org_id, mode_id, mode_key, mode_config_hash, status,
  billed_micros, token_charge_micros, surcharge_micros, platform_fee_micros, prompt_tokens, completion_tokens,
  seat_count, payer, lane) VALUES ('req_old', $1, 'conclave-standard', 'standard', 'h', 'completed', 1500, 1000, 400, 100, 30, 60, 2, 'org', 'panel')`, org.ID)
	require.NoError(t, err)
	started := time.Date(2026, 11, 1, 9, 30, 0, 123456000, time.UTC)
	ended := started.Add(1500 * time.Millisecond)
	// Inserted out of order: the move orders seats, then staff, by ordinal.
	_, err = pool.Exec(ctx, `INSERT INTO receipt_calls (request_id, kind, ordinal, role, model_used, original_model,
  fallback_used, judge_score, is_best_seat, round_number, tokens_in, tokens_out, latency_ms, started_at, ended_at,
  source, real_cost_micros, fee_rate_ppm, fee_micros, content) VALUES
  ('req_old', 'staff', 0, 'judge', 'sim/sonnet', NULL, NULL, NULL, NULL, NULL, 50, 10, NULL, $1, $2, 'conclave', 300, 50000, 15, ''),
  ('req_old', 'seat', 1, 'seat-2', 'sim/gemini-flash', 'sim/atlas', true, 0.25, false, 2, 10, 20, 1500, $1, $2, 'byok:openai', 200, 5000, 1, 'second'),
  ('req_old', 'seat', 0, 'seat-1', 'sim/atlas', NULL, false, 0.75, true, 1, 10, 30, 900, $1, $2, 'conclave', 500, 50000, 25, 'first')`,
		started, ended)
	require.NoError(t, err)

	require.NoError(t, pgstore.Migrate(ctx, pool))
	var gone bool
	require.NoError(t, pool.QueryRow(ctx, "SELECT to_regclass('receipt_calls') IS NULL").Scan(&gone))
	require.True(t, gone)
	r, err := s.GetReceipt(ctx, org.ID, "req_old")
	require.NoError(t, err)
	yes, no := true, false
	best, other := 0.75, 0.25
	one, two := 1, 2
	lat1, lat2 := int64(900), int64(1500)
	require.Equal(t, []core.ReceiptCall{
		{Role: "seat-1", ModelUsed: "sim/atlas", FallbackUsed: &no, JudgeScore: &best, IsBestSeat: &yes, RoundNumber: &one,
			TokensIn: 10, TokensOut: 30, LatencyMS: &lat1, StartedAt: started, EndedAt: ended, Source: "conclave",
			RealCost: 500, FeeRatePPM: 50000, Fee: 25, Content: "first"},
		{Role: "seat-2", ModelUsed: "sim/gemini-flash", OriginalModel: "sim/atlas", FallbackUsed: &yes, JudgeScore: &other,
			IsBestSeat: &no, RoundNumber: &two, TokensIn: 10, TokensOut: 20, LatencyMS: &lat2, StartedAt: started,
			EndedAt: ended, Source: "byok:openai", RealCost: 200, FeeRatePPM: 5000, Fee: 1, Content: "second"},
	}, normaliseTimes(r.Seats))
	require.Equal(t, []core.ReceiptCall{
		{Role: "judge", ModelUsed: "sim/sonnet", TokensIn: 50, TokensOut: 10, StartedAt: started, EndedAt: ended,
			Source: "conclave", RealCost: 300, FeeRatePPM: 50000, Fee: 15},
	}, normaliseTimes(r.Staff))
	require.Equal(t, core.Micros(1500), r.Billed)
}

// normaliseTimes puts the calls' times in UTC, so that equal instants
// compare equal whatever zone they were read in.
func normaliseTimes(calls []core.ReceiptCall) []core.ReceiptCall {
	for i := range calls {
		calls[i].StartedAt, calls[i].EndedAt = calls[i].StartedAt.UTC(), calls[i].EndedAt.UTC()
	}
	return calls
}

// The store refuses a receipt call that the database's checks on
// receipt_calls refused before 0012: nothing is written, nothing billed.
func TestInvalidReceiptCallsAreRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool, org := newAdmissionStore(t)
	for name, spoil := range map[string]func(c *core.ReceiptCall){
		"negative tokens": func(c *core.ReceiptCall) { c.TokensOut = -1 },
		"negative cost":   func(c *core.ReceiptCall) { c.RealCost = -1 },
		"negative fee":    func(c *core.ReceiptCall) { c.Fee = -1 },
		"fee rate > 100%": func(c *core.ReceiptCall) { c.FeeRatePPM = 1_000_001 },
	} {
		h, err := s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_" + strings.ReplaceAll(name, " ", "_"), Amount: 100_000})
		require.NoError(t, err, name)
		r := benchReceipt(h.RequestID)
		spoil(&r.Seats[0])
		_, err = s.SettleCall(ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: org.ID, Billed: r.Billed, Receipt: r})
		require.ErrorContains(t, err, "receipt seat call 0", name)
	}
	var receipts, held int64
	require.NoError(t, pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM receipts), (SELECT count(*) FROM holds WHERE state = 'held')").Scan(&receipts, &held))
	require.Zero(t, receipts)
	require.Equal(t, int64(4), held)
}
