package storetest

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// RunLedger is the section of core.Ledger: balances, top-ups and the
// journal that explains every balance.
func RunLedger[S interface {
	core.Orgs
	core.Ledger
}](t *testing.T, newStore func(t *testing.T) S) {
	ctx := context.Background()

	t.Run("TrialGrantIsJournaled", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Acme Labs")
		bal := balance(t, s, org.ID)
		require.Equal(t, core.TrialCredit, bal.Balance)
		postings := requireJournalMatches(t, s, org.ID)
		require.Len(t, postings, 1)
		require.Equal(t, core.PostingTrialGrant, postings[0].Kind)
		require.ElementsMatch(t, []core.Leg{
			{Account: core.AccountOrgBalance, OrgID: org.ID, Amount: core.TrialCredit},
			{Account: core.AccountTrialIssued, Amount: -core.TrialCredit},
		}, postings[0].Legs)
		_, err := s.GetBalance(ctx, "org_missing")
		require.ErrorIs(t, err, core.ErrNotFound)
	})

	t.Run("AddFundsJournaled", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Funded")
		bal, err := s.AddFunds(ctx, &core.AddFundsParams{OrgID: org.ID, Amount: 2_500_000})
		require.NoError(t, err)
		require.Equal(t, core.TrialCredit+2_500_000, bal.Balance)
		require.Equal(t, core.TrialCredit, bal.TrialRemaining, "a top-up is not trial credit")

		_, err = s.AddFunds(ctx, &core.AddFundsParams{OrgID: org.ID, Amount: 0})
		require.Error(t, err)
		_, err = s.AddFunds(ctx, &core.AddFundsParams{OrgID: org.ID, Amount: -5})
		require.Error(t, err)
		_, err = s.AddFunds(ctx, &core.AddFundsParams{OrgID: "org_missing", Amount: 5})
		require.Error(t, err)

		postings := requireJournalMatches(t, s, org.ID)
		require.Len(t, postings, 2)
		require.Equal(t, core.PostingTopUp, postings[1].Kind)
	})

	t.Run("BalanceEqualsJournalUnderConcurrency", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Busy")
		const n = 40
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := 1; i <= n; i++ {
			wg.Add(1)
			go func(amount core.Micros) {
				defer wg.Done()
				_, err := s.AddFunds(ctx, &core.AddFundsParams{OrgID: org.ID, Amount: amount})
				errs <- err
			}(core.Micros(i * 1_001))
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.Equal(t, core.TrialCredit+core.Micros(1_001*n*(n+1)/2), balance(t, s, org.ID).Balance)
		require.Len(t, requireJournalMatches(t, s, org.ID), n+1)
	})
}
