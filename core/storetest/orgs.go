package storetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// RunOrgs is the section of core.Orgs: creating organisations, their
// tickers, plan, suspension, limits and verification.
func RunOrgs[S core.Orgs](t *testing.T, newStore func(t *testing.T) S) {
	ctx := context.Background()

	t.Run("CreateOrgGrantsTheTrial", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		org, bal, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Acme Labs", Ticker: "ACME"})
		require.NoError(t, err)
		require.Equal(t, "ACME", org.Ticker)
		require.Equal(t, core.PlanStandard, org.Plan)
		require.False(t, org.Suspended())
		require.Equal(t, org.ID, bal.OrgID)
		require.Equal(t, core.TrialCredit, bal.Balance)
		require.Equal(t, core.TrialCredit, bal.TrialRemaining)
		require.Zero(t, bal.Held)

		got, err := s.GetOrg(ctx, org.ID)
		require.NoError(t, err)
		require.Equal(t, "Acme Labs", got.Name)
		byTicker, err := s.OrgByTicker(ctx, "ACME")
		require.NoError(t, err)
		require.Equal(t, org.ID, byTicker.ID)
		_, err = s.OrgByTicker(ctx, "ZZZZ")
		require.ErrorIs(t, err, core.ErrNotFound)
		_, err = s.GetOrg(ctx, "org_missing")
		require.ErrorIs(t, err, core.ErrNotFound)
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
		s, org := newOrg(t, newStore, "Suspendable")
		got, err := s.SetOrgSuspended(ctx, &core.SetOrgSuspendedParams{OrgID: org.ID, Suspended: true})
		require.NoError(t, err)
		require.True(t, got.Suspended())
		got, err = s.SetOrgSuspended(ctx, &core.SetOrgSuspendedParams{OrgID: org.ID, Suspended: false})
		require.NoError(t, err)
		require.False(t, got.Suspended())
		got, err = s.SetOrgPlan(ctx, &core.SetOrgPlanParams{OrgID: org.ID, Plan: "pro"})
		require.NoError(t, err)
		require.Equal(t, "pro", got.Plan)

		_, err = s.SetOrgSuspended(ctx, &core.SetOrgSuspendedParams{OrgID: "org_missing", Suspended: true})
		require.ErrorIs(t, err, core.ErrNotFound)
	})

	// Organisation limits and verification round-trip.
	t.Run("LimitsAndVerification", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Limited")
		require.True(t, org.Verified(), "organisations are created verified unless asked")
		u, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Pending", Unverified: true})
		require.NoError(t, err)
		require.False(t, u.Verified())
		u, err = s.SetOrgVerified(ctx, u.ID, true)
		require.NoError(t, err)
		require.True(t, u.Verified())

		conc, quota := 12, core.Micros(50_000_000)
		o, err := s.SetOrgLimits(ctx, &core.SetOrgLimitsParams{OrgID: org.ID, Concurrency: &conc, MonthlyQuota: &quota})
		require.NoError(t, err)
		require.Equal(t, 12, o.Concurrency)
		require.Equal(t, quota, *o.MonthlyQuota)
		o, err = s.SetOrgLimits(ctx, &core.SetOrgLimitsParams{OrgID: org.ID, Concurrency: new(0)})
		require.NoError(t, err)
		require.Equal(t, 0, o.Concurrency, "zero clears the override")
		require.Equal(t, quota, *o.MonthlyQuota, "a nil field is left as it is")
		got, err := s.GetOrg(ctx, org.ID)
		require.NoError(t, err)
		require.Equal(t, quota, *got.MonthlyQuota)
		_, err = s.SetOrgLimits(ctx, &core.SetOrgLimitsParams{OrgID: "org_missing", Concurrency: &conc})
		require.ErrorIs(t, err, core.ErrNotFound)
	})
}
