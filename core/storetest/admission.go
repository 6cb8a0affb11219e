package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// RunAdmission is the section of core.Admission: the hold's life (placed,
// settled, released) and the money it moves.
func RunAdmission[S interface {
	core.Orgs
	core.Ledger
	core.Admission
}](t *testing.T, newStore func(t *testing.T) S) {
	ctx := context.Background()

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
