package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// RunReceipts is the section of core.Receipts: a receipt written by
// Admission.SettleCall reads back whole, for its organisation only.
func RunReceipts[S interface {
	core.Orgs
	core.Ledger
	core.Admission
	core.Receipts
}](t *testing.T, newStore func(t *testing.T) S) {
	ctx := context.Background()

	t.Run("ReceiptRoundTrip", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Caller")
		other := createOrg(t, s, "Other")
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
		require.Zero(t, got.ModeVersion, "a configured mode has no version")
		require.Equal(t, core.TrialCredit-want.Billed, balance(t, s, org.ID).Balance)
		requireJournalMatches(t, s, org.ID)

		// A receipt of an organisation's mode names the version that ran.
		h3, err := s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_authored", Amount: 2_000_000})
		require.NoError(t, err)
		authored := sampleReceipt()
		authored.Mode, authored.ModeKey, authored.ModeVersion = "acme-panl", "panl", 3
		_, err = s.SettleCall(ctx, &core.SettleCallParams{HoldID: h3.ID, OrgID: org.ID, Billed: authored.Billed, Receipt: authored})
		require.NoError(t, err)
		got, err = s.GetReceipt(ctx, org.ID, "req_authored")
		require.NoError(t, err)
		require.Equal(t, 3, got.ModeVersion)
		require.Equal(t, "acme-panl", got.Mode)
		authored.RequestID, authored.OrgID, authored.CreatedAt = "req_authored", org.ID, got.CreatedAt
		authored.Response, got.Response = nil, nil
		require.Equal(t, inUTC(authored), inUTC(got))
	})

	t.Run("SettleRefusesAMismatchedReceipt", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Caller")
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
