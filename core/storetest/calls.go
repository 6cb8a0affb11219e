package storetest

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// runCalls is the part of the suite about money for calls: holds,
// settlement, release and receipts.
func runCalls(t *testing.T, newStore func(t *testing.T) core.Store) {
	ctx := context.Background()

	// newOrg returns a store and an organisation holding the trial credit
	// plus topUp of prepaid money.
	newOrg := func(t *testing.T, topUp core.Micros) (core.Store, *core.Org) {
		t.Helper()
		s := newStore(t)
		org, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Caller"})
		require.NoError(t, err)
		if topUp > 0 {
			_, err = s.AddFunds(ctx, &core.AddFundsParams{OrgID: org.ID, Amount: topUp})
			require.NoError(t, err)
		}
		return s, org
	}
	balance := func(t *testing.T, s core.Store, orgID string) *core.Balance {
		t.Helper()
		b, err := s.GetBalance(ctx, orgID)
		require.NoError(t, err)
		return b
	}
	requireJournalMatches := func(t *testing.T, s core.Store, orgID string) []*core.Posting {
		t.Helper()
		postings, err := s.ListPostings(ctx, orgID)
		require.NoError(t, err)
		requireBalanced(t, postings)
		require.Equal(t, balance(t, s, orgID).Balance, orgLegSum(postings, orgID), "balance equals journal")
		return postings
	}

	t.Run("HoldFitsOrIsRefused", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, 0)
		h, err := s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_a", Amount: 4_000_000})
		require.NoError(t, err)
		require.Equal(t, core.HoldHeld, h.State)
		require.Equal(t, org.ID, h.OrgID)
		require.Equal(t, "req_a", h.RequestID)
		require.Equal(t, core.Micros(4_000_000), h.Amount)
		require.Nil(t, h.SettledAt)
		require.WithinDuration(t, h.CreatedAt.Add(core.DefaultHoldTTL), h.ExpiresAt, time.Second)
		b := balance(t, s, org.ID)
		require.Equal(t, core.TrialCredit, b.Balance, "a hold charges nothing")
		require.Equal(t, core.Micros(4_000_000), b.Held)
		require.Equal(t, core.Micros(6_000_000), b.Available())

		_, err = s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_b", Amount: 6_000_001})
		require.ErrorIs(t, err, core.ErrInsufficientFunds)
		require.Equal(t, b.Held, balance(t, s, org.ID).Held, "a refused hold reserves nothing")

		h2, err := s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_b", Amount: 6_000_000, TTL: time.Minute})
		require.NoError(t, err, "exactly the available amount fits")
		require.WithinDuration(t, h2.CreatedAt.Add(time.Minute), h2.ExpiresAt, time.Second)
		require.Zero(t, balance(t, s, org.ID).Available())

		_, err = s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_a", Amount: 1})
		require.Error(t, err)
		_, err = s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_c", Amount: 0})
		require.Error(t, err)
		_, err = s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: "org_missing", RequestID: "req_d", Amount: 1})
		require.ErrorIs(t, err, core.ErrNotFound)

		require.NoError(t, s.ReleaseHold(ctx, h.ID, org.ID))
		_, err = s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_a", Amount: 1})
		require.ErrorIs(t, err, core.ErrConflict, "one hold per request id, ever")
		requireJournalMatches(t, s, org.ID)
	})

	t.Run("SettleChargesExactlyBilledAndJournalsIt", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, 0)
		h, err := s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_1", Amount: 2_000_000})
		require.NoError(t, err)
		bal, err := s.SettleCall(ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: org.ID, Billed: 457_000})
		require.NoError(t, err)
		require.Equal(t, core.TrialCredit-457_000, bal.Balance)
		require.Zero(t, bal.Held, "the rest of the hold is released")
		require.Equal(t, bal, balance(t, s, org.ID))

		postings := requireJournalMatches(t, s, org.ID)
		require.Len(t, postings, 2)
		charge := postings[1]
		require.Equal(t, core.PostingCallCharge, charge.Kind)
		require.ElementsMatch(t, []core.Leg{
			{Account: core.AccountOrgBalance, OrgID: org.ID, Amount: -457_000},
			{Account: core.AccountRevenue, Amount: 457_000},
		}, charge.Legs)
	})

	t.Run("TrialCreditIsSpentFirst", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, 1_000_000) // $10 trial + $1 prepaid
		settle := func(amount core.Micros, req string) *core.Balance {
			h, err := s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: req, Amount: amount})
			require.NoError(t, err)
			bal, err := s.SettleCall(ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: org.ID, Billed: amount})
			require.NoError(t, err)
			return bal
		}
		bal := settle(9_500_000, "req_1")
		require.Equal(t, core.Micros(1_500_000), bal.Balance)
		require.Equal(t, core.Micros(500_000), bal.TrialRemaining, "the trial paid all of it")
		bal = settle(1_200_000, "req_2")
		require.Equal(t, core.Micros(300_000), bal.Balance)
		require.Zero(t, bal.TrialRemaining, "the trial paid what it had left, prepaid money the rest")
		bal = settle(300_000, "req_3")
		require.Zero(t, bal.Balance)
		require.Zero(t, bal.TrialRemaining)
		requireJournalMatches(t, s, org.ID)
	})

	t.Run("SettleAboveTheHoldIsRefused", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, 0)
		h, err := s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_1", Amount: 1_000_000})
		require.NoError(t, err)
		_, err = s.SettleCall(ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: org.ID, Billed: 1_000_001})
		require.ErrorIs(t, err, core.ErrAboveHold)
		b := balance(t, s, org.ID)
		require.Equal(t, core.TrialCredit, b.Balance, "nothing charged")
		require.Equal(t, core.Micros(1_000_000), b.Held, "the hold is still there")
		_, err = s.SettleCall(ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: org.ID, Billed: -1})
		require.Error(t, err)

		bal, err := s.SettleCall(ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: org.ID, Billed: 1_000_000})
		require.NoError(t, err, "exactly the hold settles")
		require.Equal(t, core.TrialCredit-1_000_000, bal.Balance)
		requireJournalMatches(t, s, org.ID)
	})

	t.Run("ReleaseChargesNothing", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, 0)
		other, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Other"})
		require.NoError(t, err)
		h, err := s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_1", Amount: 2_000_000})
		require.NoError(t, err)
		require.ErrorIs(t, s.ReleaseHold(ctx, h.ID, other.ID), core.ErrNotFound, "another organisation's hold")
		require.ErrorIs(t, s.ReleaseHold(ctx, "hold_missing", org.ID), core.ErrNotFound)
		require.NoError(t, s.ReleaseHold(ctx, h.ID, org.ID))
		b := balance(t, s, org.ID)
		require.Equal(t, core.TrialCredit, b.Balance)
		require.Equal(t, core.TrialCredit, b.TrialRemaining)
		require.Zero(t, b.Held)
		require.NoError(t, s.ReleaseHold(ctx, h.ID, org.ID), "releasing twice is a no-op")
		require.Zero(t, balance(t, s, org.ID).Held)
		_, err = s.SettleCall(ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: org.ID, Billed: 1})
		require.ErrorIs(t, err, core.ErrConflict, "a released hold cannot be charged")
		postings := requireJournalMatches(t, s, org.ID)
		require.Len(t, postings, 1, "only the trial grant")
	})

	t.Run("DoubleSettleIsRefused", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, 0)
		other, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Other"})
		require.NoError(t, err)
		h, err := s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_1", Amount: 2_000_000})
		require.NoError(t, err)
		_, err = s.SettleCall(ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: other.ID, Billed: 1})
		require.ErrorIs(t, err, core.ErrNotFound, "another organisation cannot settle the hold")

		// Settle the same hold from several goroutines: exactly one charges.
		const n = 8
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := s.SettleCall(ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: org.ID, Billed: 700_000})
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		ok := 0
		for err := range errs {
			if err == nil {
				ok++
				continue
			}
			require.ErrorIs(t, err, core.ErrConflict)
		}
		require.Equal(t, 1, ok)
		_, err = s.SettleCall(ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: org.ID, Billed: 700_000})
		require.ErrorIs(t, err, core.ErrConflict)
		require.ErrorIs(t, s.ReleaseHold(ctx, h.ID, org.ID), core.ErrConflict, "a settled hold cannot be released")
		b := balance(t, s, org.ID)
		require.Equal(t, core.TrialCredit-700_000, b.Balance, "charged once")
		require.Zero(t, b.Held)
		require.Len(t, requireJournalMatches(t, s, org.ID), 2)
	})

	t.Run("ConcurrentHoldsNeverOverCommit", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, 0)
		const n = 50
		const amount = core.Micros(300_000)
		var wg sync.WaitGroup
		type result struct {
			hold *core.Hold
			err  error
		}
		results := make(chan result, n)
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h, err := s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: core.NewID("req"), Amount: amount})
				results <- result{h, err}
			}()
		}
		wg.Wait()
		close(results)
		var held core.Micros
		for r := range results {
			if r.err != nil {
				require.ErrorIs(t, r.err, core.ErrInsufficientFunds)
				continue
			}
			held += r.hold.Amount
		}
		require.LessOrEqual(t, held, core.TrialCredit, "never more held than available")
		require.Equal(t, core.Micros(33)*amount, held, "every hold that fits is granted")
		b := balance(t, s, org.ID)
		require.Equal(t, held, b.Held)
		require.Equal(t, core.TrialCredit, b.Balance)
	})

	t.Run("ReceiptRoundTrip", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, 0)
		other, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Other"})
		require.NoError(t, err)
		h, err := s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_rt", Amount: 2_000_000})
		require.NoError(t, err)

		want := sampleReceipt()
		bal, err := s.SettleCall(ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: org.ID, Billed: want.Billed, Receipt: want})
		require.NoError(t, err)
		require.Equal(t, core.TrialCredit-want.Billed, bal.Balance)

		got, err := s.GetReceipt(ctx, org.ID, "req_rt")
		require.NoError(t, err)
		require.False(t, got.CreatedAt.IsZero())
		want.RequestID, want.OrgID, want.CreatedAt = "req_rt", org.ID, got.CreatedAt
		require.JSONEq(t, string(want.Response), string(got.Response))
		want.Response, got.Response = nil, nil
		require.Equal(t, inUTC(want), inUTC(got))

		_, err = s.GetReceipt(ctx, other.ID, "req_rt")
		require.ErrorIs(t, err, core.ErrNotFound, "another organisation's receipt")
		_, err = s.GetReceipt(ctx, org.ID, "req_missing")
		require.ErrorIs(t, err, core.ErrNotFound)

		// A receipt with only the required fields keeps its nulls.
		h2, err := s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_min", Amount: 1_000_000})
		require.NoError(t, err)
		minimal := &core.Receipt{Mode: "conclave-standard", ModeKey: "standard", ModeConfigHash: "abc", Status: "failed", Payer: "org"}
		_, err = s.SettleCall(ctx, &core.SettleCallParams{HoldID: h2.ID, OrgID: org.ID, Receipt: minimal})
		require.NoError(t, err, "a zero bill settles with a receipt and charges nothing")
		got, err = s.GetReceipt(ctx, org.ID, "req_min")
		require.NoError(t, err)
		require.Nil(t, got.CapCredit)
		require.Nil(t, got.BestSeat)
		require.Nil(t, got.Rounds)
		require.Nil(t, got.DifficultyScore)
		require.Nil(t, got.MinorityInsightLikely)
		require.Empty(t, got.Lane)
		require.Empty(t, got.Seats)
		require.Nil(t, got.Response)
		require.Equal(t, core.TrialCredit-want.Billed, balance(t, s, org.ID).Balance)
		requireJournalMatches(t, s, org.ID)
	})

	t.Run("SettleRefusesAMismatchedReceipt", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, 0)
		h, err := s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_1", Amount: 2_000_000})
		require.NoError(t, err)
		r := sampleReceipt()
		_, err = s.SettleCall(ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: org.ID, Billed: r.Billed + 1, Receipt: r})
		require.Error(t, err, "receipt bills another amount")
		r.RequestID = "req_other"
		_, err = s.SettleCall(ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: org.ID, Billed: r.Billed, Receipt: r})
		require.Error(t, err, "receipt for another request")
		b := balance(t, s, org.ID)
		require.Equal(t, core.TrialCredit, b.Balance, "nothing charged")
		require.Equal(t, core.Micros(2_000_000), b.Held, "the hold is still there")
		_, err = s.GetReceipt(ctx, org.ID, "req_1")
		require.ErrorIs(t, err, core.ErrNotFound, "no receipt written")
		requireJournalMatches(t, s, org.ID)
	})
}

// sampleReceipt is a panel call on the service's keys with every optional
// field set: three seats, a judge and a synthesis pass.
func sampleReceipt() *core.Receipt {
	t0 := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	f := func(v float64) *float64 { return &v }
	b := func(v bool) *bool { return &v }
	i := func(v int) *int { return &v }
	ms := func(v int64) *int64 { return &v }
	seat := func(role, model string, cost core.Micros, best bool) core.ReceiptCall {
		return core.ReceiptCall{
			Role: role, ModelUsed: model, FallbackUsed: b(false), JudgeScore: f(0.5), IsBestSeat: b(best),
			RoundNumber: i(1), TokensIn: 1200, TokensOut: 400, LatencyMS: ms(2100),
			StartedAt: t0, EndedAt: t0.Add(2100 * time.Millisecond), Source: "service",
			RealCost: cost, FeeRatePPM: core.FeeRateServicePPM, Fee: core.CallFee(cost, core.FeeRateServicePPM),
			Content: "answer from " + role,
		}
	}
	seats := []core.ReceiptCall{
		seat("seat_1", "sim/atlas", 100_000, true),
		seat("seat_2", "sim/borealis", 200_000, false),
		seat("seat_3", "sim/cirrus", 40_000, false),
	}
	seats[2].OriginalModel, seats[2].FallbackUsed = "sim/cumulus", b(true)
	staff := []core.ReceiptCall{
		{Role: "judge", ModelUsed: "sim/judge", TokensIn: 3000, TokensOut: 200, StartedAt: t0.Add(3 * time.Second),
			EndedAt: t0.Add(4 * time.Second), Source: "service", RealCost: 20_000, FeeRatePPM: core.FeeRateServicePPM, Fee: 1_000},
		{Role: "synthesis", ModelUsed: "sim/synth", TokensIn: 2500, TokensOut: 500, StartedAt: t0.Add(4 * time.Second),
			EndedAt: t0.Add(6 * time.Second), Source: "service", RealCost: 20_000, FeeRatePPM: core.FeeRateServicePPM, Fee: 1_000},
	}
	var calls []core.BilledCall
	for _, c := range append(append([]core.ReceiptCall{}, seats...), staff...) {
		calls = append(calls, core.BilledCall{RealCost: c.RealCost})
	}
	bill := core.ComputeBill(core.BillInput{Calls: calls, Surcharge: 100_000, Ceiling: 2_000_000})
	capCredit := bill.CapCredit
	done := t0.Add(6 * time.Second)
	return &core.Receipt{
		Mode: "conclave-standard", ModeKey: "standard", ModeConfigHash: "9f2c1a", Status: "completed",
		Billed: bill.Billed, TokenCharge: bill.TokenCharge, Surcharge: bill.Surcharge, PlatformFee: bill.PlatformFee,
		CapCredit:    &capCredit,
		PromptTokens: 8700, CompletionTokens: 1900, Rounds: i(1), SeatCount: 3, Payer: "org", Lane: core.LanePanel,
		DifficultyScore: f(0.62), TaskType: "analysis", HallucinationRisk: "low", MinorityInsightLikely: b(false),
		BestSeat:         &core.BestSeat{ModelUsed: "sim/atlas", JudgeScore: f(0.5), Content: "answer from seat_1"},
		Seats:            seats,
		Staff:            staff,
		SeatsUnavailable: []core.Unavailable{{Role: "seat_4", Reason: "engine_unavailable"}},
		LatencyMS:        ms(6000),
		CompletedAt:      &done,
		Response:         json.RawMessage(`{"id": "req_rt", "object": "chat.completion"}`),
	}
}

// inUTC returns a copy of r with every time in UTC, so receipts compare
// equal whatever zone the store reads times back in.
func inUTC(r *core.Receipt) *core.Receipt {
	c := *r
	c.CreatedAt = c.CreatedAt.UTC()
	if c.CompletedAt != nil {
		t := c.CompletedAt.UTC()
		c.CompletedAt = &t
	}
	for _, calls := range []*[]core.ReceiptCall{&c.Seats, &c.Staff} {
		cp := append([]core.ReceiptCall(nil), (*calls)...)
		for i := range cp {
			cp[i].StartedAt, cp[i].EndedAt = cp[i].StartedAt.UTC(), cp[i].EndedAt.UTC()
		}
		*calls = cp
	}
	return &c
}
