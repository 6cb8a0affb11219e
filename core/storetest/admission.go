package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// RunAdmission is the section of core.Admission: what Admit refuses (the
// key's rate, the organisation's slots, the idempotency claim, the money),
// that a refused call keeps nothing, the leases of live calls, and the
// hold's life (placed, settled, released) with the money it moves.
func RunAdmission[S interface {
	core.Orgs
	core.Ledger
	core.Admission
}](t *testing.T, newStore func(t *testing.T) S) {
	ctx := context.Background()

	admit := func(t *testing.T, s core.Admission, p core.AdmitParams) *core.AdmitResult {
		t.Helper()
		a, err := s.Admit(ctx, &p)
		require.NoError(t, err)
		return a
	}

	// The rate admits the minute's whole budget at once, then refuses
	// with the wait until the next request fits; other keys are counted
	// apart.
	t.Run("RateRefusesPastTheBudget", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		for i := range 6 {
			a := admit(t, s, core.AdmitParams{KeyID: "key_a", PerMinute: 6})
			require.NoError(t, a.Refused, "request %d of a budget of 6", i+1)
		}
		a := admit(t, s, core.AdmitParams{KeyID: "key_a", PerMinute: 6})
		require.ErrorIs(t, a.Refused, core.ErrRateLimited, "the 7th request of a budget of 6 within the minute")
		require.Greater(t, a.RetryAfter, time.Duration(0))
		require.LessOrEqual(t, a.RetryAfter, 10*time.Second, "one emission interval at 6 per minute")
		a = admit(t, s, core.AdmitParams{KeyID: "key_b", PerMinute: 6})
		require.NoError(t, a.Refused, "another key has its own budget")
	})

	// Slots: the limit refuses the next call, and a slot given back (by
	// ReleaseSlot, by releasing the call's hold, by settling it) is free.
	t.Run("SlotLimitRefusesAndAReleasedSlotFrees", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Caller")
		slot := func(requestID string, amount core.Micros) *core.AdmitResult {
			t.Helper()
			return admit(t, s, core.AdmitParams{OrgID: org.ID, RequestID: requestID, SlotLimit: 2, Lease: time.Minute,
				Hold: core.PlaceHoldParams{Amount: amount}})
		}
		require.NoError(t, slot("req_1", 0).Refused)
		require.NoError(t, slot("req_2", 0).Refused)
		refused := slot("req_3", 1_000)
		require.ErrorIs(t, refused.Refused, core.ErrNoSlot)
		require.Nil(t, refused.Hold)
		require.Zero(t, balance(t, s, org.ID).Held, "a call refused a slot holds no money")

		require.NoError(t, s.ReleaseSlot(ctx, org.ID, "req_1"))
		require.NoError(t, s.ReleaseSlot(ctx, org.ID, "req_1"), "releasing a free slot does nothing")
		held := slot("req_3", 1_000)
		require.NoError(t, held.Refused, "a released slot is free")
		require.ErrorIs(t, slot("req_4", 1_000).Refused, core.ErrNoSlot)

		require.NoError(t, s.ReleaseHold(ctx, held.Hold.ID, org.ID))
		settled := slot("req_4", 1_000)
		require.NoError(t, settled.Refused, "releasing a hold frees its call's slot")
		_, err := s.SettleCall(ctx, &core.SettleCallParams{HoldID: settled.Hold.ID, OrgID: org.ID, Billed: 500})
		require.NoError(t, err)
		require.NoError(t, slot("req_5", 0).Refused, "settling a call frees its slot")
		require.ErrorIs(t, slot("req_6", 0).Refused, core.ErrNoSlot)

		other := createOrg(t, s, "Other")
		a := admit(t, s, core.AdmitParams{OrgID: other.ID, RequestID: "req_7", SlotLimit: 2, Lease: time.Minute})
		require.NoError(t, a.Refused, "another organisation has its own slots")
	})

	// The idempotency claim: a repeat of a key in flight is refused with
	// the first call's claim; a released claim runs again; a settled call's
	// claim is kept (succeeded) or taken again (capped); organisations do
	// not share keys.
	t.Run("IdempotencyClaim", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Caller")
		claim := func(orgID, key, requestID string) *core.AdmitResult {
			t.Helper()
			return admit(t, s, core.AdmitParams{OrgID: orgID, RequestID: requestID, Lease: time.Minute,
				IdempotencyKey: key, RequestHash: hashOf(requestID)})
		}
		require.NoError(t, claim(org.ID, "k1", "req_1").Refused)
		a := claim(org.ID, "k1", "req_2")
		require.ErrorIs(t, a.Refused, core.ErrClaimed)
		require.Equal(t, &core.Claim{State: core.ClaimInFlight, RequestID: "req_1", RequestHash: hashOf("req_1")}, a.Claim)

		require.NoError(t, s.ReleaseClaim(ctx, org.ID, "k1", "req_2"), "only the holder's release counts")
		require.ErrorIs(t, claim(org.ID, "k1", "req_3").Refused, core.ErrClaimed)
		require.NoError(t, s.ReleaseClaim(ctx, org.ID, "k1", "req_1"))
		require.NoError(t, claim(org.ID, "k1", "req_4").Refused, "a released claim runs again")

		settle := func(key, requestID string, state core.ClaimState) {
			t.Helper()
			h, err := s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: requestID, Amount: 1_000})
			require.NoError(t, err)
			_, err = s.SettleCall(ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: org.ID, Billed: 500,
				IdempotencyKey: key, ClaimState: state})
			require.NoError(t, err)
		}
		settle("k1", "req_4", core.ClaimSucceeded)
		a = claim(org.ID, "k1", "req_5")
		require.ErrorIs(t, a.Refused, core.ErrClaimed)
		require.Equal(t, core.ClaimSucceeded, a.Claim.State, "a repeat of a succeeded call replays it")
		require.Equal(t, "req_4", a.Claim.RequestID)

		require.NoError(t, claim(org.ID, "k2", "req_6").Refused)
		settle("k2", "req_6", core.ClaimCapped)
		require.NoError(t, claim(org.ID, "k2", "req_7").Refused, "a capped call's key runs again")

		other := createOrg(t, s, "Other")
		require.NoError(t, claim(other.ID, "k1", "req_8").Refused, "organisations do not share keys")
	})

	// A call refused anywhere keeps nothing it took before the refusal:
	// refused for its money, it holds no money, no slot and no claim.
	t.Run("RefusedHoldLeavesNothingHeld", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Caller")
		first, err := s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_first", Amount: 4_000_000})
		require.NoError(t, err)
		call := func(requestID string, amount core.Micros) *core.AdmitResult {
			t.Helper()
			return admit(t, s, core.AdmitParams{KeyID: "key_1", PerMinute: 100, OrgID: org.ID, RequestID: requestID,
				SlotLimit: 1, Lease: time.Minute, IdempotencyKey: "k", RequestHash: hashOf(requestID),
				Hold: core.PlaceHoldParams{Amount: amount}})
		}
		a := call("req_broke", core.TrialCredit-4_000_000+1)
		require.ErrorIs(t, a.Refused, core.ErrInsufficientFunds)
		require.Nil(t, a.Hold)
		b := balance(t, s, org.ID)
		require.Equal(t, first.Amount, b.Held, "only the first call's hold")
		require.Equal(t, core.TrialCredit, b.Balance)

		a = call("req_fits", core.TrialCredit-4_000_000)
		require.NoError(t, a.Refused, "the refused call kept neither the slot nor the key")
		require.Equal(t, core.TrialCredit, balance(t, s, org.ID).Held)
		require.Len(t, requireJournalMatches(t, s, org.ID), 1, "only the trial grant")
	})

	// RenewLeases keeps a live call's slot and claim past their first
	// lease; a call that is not renewed lets them lapse, and another call
	// takes them.
	t.Run("RenewLeasesKeepsALiveCallsLeases", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Caller")
		const lease = 500 * time.Millisecond
		call := func(requestID, key string) *core.AdmitResult {
			t.Helper()
			return admit(t, s, core.AdmitParams{OrgID: org.ID, RequestID: requestID, SlotLimit: 2, Lease: lease,
				IdempotencyKey: key, RequestHash: hashOf(requestID), Hold: core.PlaceHoldParams{Amount: 1_000}})
		}
		require.NoError(t, call("req_live", "k_live").Refused)
		require.NoError(t, call("req_dead", "k_dead").Refused)
		require.NoError(t, s.RenewLeases(ctx, []string{"req_live"}, time.Hour))
		require.NoError(t, s.RenewLeases(ctx, nil, time.Hour), "renewing no call does nothing")

		require.Eventually(t, func() bool {
			a, err := s.Admit(ctx, &core.AdmitParams{OrgID: org.ID, RequestID: "req_retry", Lease: time.Minute,
				IdempotencyKey: "k_dead", RequestHash: hashOf("req_retry")})
			return err == nil && a.Refused == nil
		}, 10*time.Second, 20*time.Millisecond, "the claim of a call not renewed lapses")

		a := call("req_next", "k_live")
		require.ErrorIs(t, a.Refused, core.ErrClaimed, "the live call's claim is kept")
		require.Equal(t, core.ClaimInFlight, a.Claim.State)
		require.Equal(t, "req_live", a.Claim.RequestID)
		slot := func(requestID string) error {
			t.Helper()
			return admit(t, s, core.AdmitParams{OrgID: org.ID, RequestID: requestID, SlotLimit: 2, Lease: time.Minute}).Refused
		}
		require.NoError(t, slot("req_x"), "the lapsed slot is taken")
		require.ErrorIs(t, slot("req_y"), core.ErrNoSlot, "the live call's slot is kept")
	})

	t.Run("HoldFitsOrIsRefused", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Caller")
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
		s, org := newOrg(t, newStore, "Caller")
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
		s, org := newOrg(t, newStore, "Caller")
		_, err := s.AddFunds(ctx, &core.AddFundsParams{OrgID: org.ID, Amount: 1_000_000}) // $10 trial + $1 prepaid
		require.NoError(t, err)
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
		s, org := newOrg(t, newStore, "Caller")
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
		s, org := newOrg(t, newStore, "Caller")
		other := createOrg(t, s, "Other")
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
		s, org := newOrg(t, newStore, "Caller")
		other := createOrg(t, s, "Other")
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
		s, org := newOrg(t, newStore, "Caller")
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
}
