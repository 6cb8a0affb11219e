// Package storetest is the conformance suite for core.Store. Every Store
// implementation runs Run from its own tests against a real backend.
package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// Run runs the suite. newStore must return a Store over a fresh, empty,
// migrated database each time it is called.
func Run(t *testing.T, newStore func(t *testing.T) core.Store) {
	ctx := context.Background()

	t.Run("CreateOrgGrantsJournaledTrial", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		org, bal, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Acme Labs", Ticker: "ACME"})
		require.NoError(t, err)
		require.Equal(t, "ACME", org.Ticker)
		require.Equal(t, core.PlanStandard, org.Plan)
		require.False(t, org.Suspended())
		require.Equal(t, core.TrialCredit, bal.Balance)
		require.Equal(t, core.TrialCredit, bal.TrialRemaining)
		byTicker, err := s.OrgByTicker(ctx, "ACME")
		require.NoError(t, err)
		require.Equal(t, org.ID, byTicker.ID)
		_, err = s.OrgByTicker(ctx, "ZZZZ")
		require.ErrorIs(t, err, core.ErrNotFound)
		require.Zero(t, bal.Held)

		postings, err := s.ListPostings(ctx, org.ID)
		require.NoError(t, err)
		require.Len(t, postings, 1)
		require.Equal(t, core.PostingTrialGrant, postings[0].Kind)
		requireBalanced(t, postings)
		require.Equal(t, bal.Balance, orgLegSum(postings, org.ID))
	})

	t.Run("TickerDerivedAndUnique", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		a, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Quantum Ink"})
		require.NoError(t, err)
		require.Equal(t, "QUAN", a.Ticker)
		b, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Quantum Ink"})
		require.NoError(t, err)
		require.NotEqual(t, a.Ticker, b.Ticker)
		require.True(t, core.ValidTicker(b.Ticker))
		_, _, err = s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Other", Ticker: a.Ticker})
		require.ErrorIs(t, err, core.ErrConflict)
	})

	t.Run("SuspendAndPlan", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		org, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Suspendable"})
		require.NoError(t, err)
		got, err := s.SetOrgSuspended(ctx, &core.SetOrgSuspendedParams{OrgID: org.ID, Suspended: true})
		require.NoError(t, err)
		require.True(t, got.Suspended())
		got, err = s.SetOrgSuspended(ctx, &core.SetOrgSuspendedParams{OrgID: org.ID, Suspended: false})
		require.NoError(t, err)
		require.False(t, got.Suspended())
		got, err = s.SetOrgPlan(ctx, &core.SetOrgPlanParams{OrgID: org.ID, Plan: "pro"})
		require.NoError(t, err)
		require.Equal(t, "pro", got.Plan)

		_, err = s.GetOrg(ctx, "org_missing")
		require.ErrorIs(t, err, core.ErrNotFound)
		_, err = s.SetOrgSuspended(ctx, &core.SetOrgSuspendedParams{OrgID: "org_missing", Suspended: true})
		require.ErrorIs(t, err, core.ErrNotFound)
	})

	t.Run("AddFundsJournaled", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		org, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Funded"})
		require.NoError(t, err)
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

		postings, err := s.ListPostings(ctx, org.ID)
		require.NoError(t, err)
		require.Len(t, postings, 2)
		requireBalanced(t, postings)
		got, err := s.GetBalance(ctx, org.ID)
		require.NoError(t, err)
		require.Equal(t, got.Balance, orgLegSum(postings, org.ID))
	})

	t.Run("BalanceEqualsJournalUnderConcurrency", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		org, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Busy"})
		require.NoError(t, err)
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
		bal, err := s.GetBalance(ctx, org.ID)
		require.NoError(t, err)
		require.Equal(t, core.TrialCredit+core.Micros(1_001*n*(n+1)/2), bal.Balance)
		postings, err := s.ListPostings(ctx, org.ID)
		require.NoError(t, err)
		require.Len(t, postings, n+1)
		requireBalanced(t, postings)
		require.Equal(t, bal.Balance, orgLegSum(postings, org.ID))
	})

	t.Run("Keys", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		org, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Keyed"})
		require.NoError(t, err)
		secret, hash := core.NewKeySecret(false)
		exp := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
		k, err := s.CreateKey(ctx, &core.CreateKeyParams{
			OrgID: org.ID, Hash: hash, Hint: core.KeyHint(secret), Name: "ci",
			Scopes: []string{core.ScopeModelsRead}, Modes: []string{"conclave-standard"},
			RPM: 120, Concurrency: 7, MaxInputTokens: 16000, Ceiling: 3_000_000, ExpiresAt: &exp,
		})
		require.NoError(t, err)
		require.Equal(t, org.ID, k.OrgID)
		require.Equal(t, []string{core.ScopeModelsRead}, k.Scopes)
		require.Equal(t, []string{"conclave-standard"}, k.Modes)
		require.Equal(t, 120, k.RPM)
		require.Equal(t, 7, k.Concurrency)
		require.Equal(t, 16000, k.MaxInputTokens)
		require.Equal(t, core.Micros(3_000_000), k.Ceiling)
		require.True(t, exp.Equal(*k.ExpiresAt))

		gotKey, gotOrg, err := s.KeyByHash(ctx, core.HashKey(secret))
		require.NoError(t, err)
		require.Equal(t, k.ID, gotKey.ID)
		require.Equal(t, org.ID, gotOrg.ID)
		require.Empty(t, gotKey.Status(time.Now()))

		_, _, err = s.KeyByHash(ctx, core.HashKey("ccl_live_nope"))
		require.ErrorIs(t, err, core.ErrNotFound)

		// Defaults: every scope, no limits, no mode restriction.
		_, hash2 := core.NewKeySecret(true)
		k2, err := s.CreateKey(ctx, &core.CreateKeyParams{OrgID: org.ID, Hash: hash2, Hint: "ccl_test_…", Test: true})
		require.NoError(t, err)
		require.Equal(t, core.AllScopes, k2.Scopes)
		require.Empty(t, k2.Modes)
		require.Zero(t, k2.RPM)
		require.Zero(t, k2.Ceiling)
		require.True(t, k2.Test)

		revoked, err := s.RevokeKey(ctx, k.ID)
		require.NoError(t, err)
		require.Equal(t, "revoked", revoked.Status(time.Now()))
		gotKey, _, err = s.KeyByHash(ctx, hash)
		require.NoError(t, err)
		require.Equal(t, "revoked", gotKey.Status(time.Now()))

		keys, err := s.ListKeys(ctx, org.ID)
		require.NoError(t, err)
		require.Len(t, keys, 2)

		_, err = s.RevokeKey(ctx, "key_missing")
		require.ErrorIs(t, err, core.ErrNotFound)
		_, err = s.CreateKey(ctx, &core.CreateKeyParams{OrgID: "org_missing", Hash: core.HashKey("x"), Hint: "x"})
		require.True(t, errors.Is(err, core.ErrNotFound), "key for a missing org: %v", err)
	})

	runCalls(t, newStore)
}

func requireBalanced(t *testing.T, postings []*core.Posting) {
	t.Helper()
	for _, p := range postings {
		var sum core.Micros
		for _, l := range p.Legs {
			sum += l.Amount
		}
		require.Zerof(t, sum, "posting %d legs sum to %s", p.ID, sum)
		require.GreaterOrEqual(t, len(p.Legs), 2)
	}
}

func orgLegSum(postings []*core.Posting, orgID string) core.Micros {
	var sum core.Micros
	for _, p := range postings {
		for _, l := range p.Legs {
			if l.Account == core.AccountOrgBalance && l.OrgID == orgID {
				sum += l.Amount
			}
		}
	}
	return sum
}
