package core_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

func TestPlansOf(t *testing.T) {
	t.Parallel()
	pro := core.Plan{Name: "pro", MaxTier: core.TierPro, Allowance: core.USD(100), Concurrency: 3, RPM: 60, Configured: true}
	plans := core.Plans{"pro": pro}
	require.Equal(t, pro, plans.Of("pro"))
	require.Equal(t, core.Plan{Name: "gold", MaxTier: core.TierExperience, Concurrency: core.DefaultPlanConcurrency,
		RPM: core.DefaultPlanRPM}, plans.Of("gold"), "not configured: the lowest tier, no allowance")
	require.False(t, core.Plans(nil).Of("pro").Configured)
}

func TestPlanTier(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]core.Tier{"free": core.TierExperience, "experience": core.TierExperience,
		"plus": core.TierPlus, "pro": core.TierPro} {
		got, ok := core.PlanTier(in)
		require.True(t, ok, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "Pro", "ultra"} {
		_, ok := core.PlanTier(in)
		require.False(t, ok, in)
	}
}

// The allowance counts calendar months in UTC: it resets at midnight UTC on
// the first, whatever the caller's zone, and December's resets in January.
func TestAllowanceResets(t *testing.T) {
	t.Parallel()
	tokyo := time.FixedZone("JST", 9*3600)
	for _, tc := range []struct{ now, start, resets time.Time }{
		{time.Date(2026, 7, 31, 23, 59, 59, 0, time.UTC), time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)},
		{time.Date(2026, 12, 15, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{time.Date(2026, 8, 1, 5, 0, 0, 0, tokyo), time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)},
	} {
		require.Equal(t, tc.start, core.MonthStart(tc.now), "%v", tc.now)
		require.Equal(t, tc.resets, core.AllowanceResets(tc.now), "%v", tc.now)
	}
}

func TestPlanRefusals(t *testing.T) {
	t.Parallel()
	plus := core.Plan{Name: "plus", MaxTier: core.TierPlus, Allowance: core.USD(20), Concurrency: 2, RPM: 60, Configured: true}
	now := time.Date(2026, 7, 14, 12, 0, 0, 0, time.UTC)
	e := core.PlanLimitReached(plus, 19_990_000, now)
	require.Equal(t, core.CodePlanLimitReached, e.Code)
	require.Equal(t, 402, core.InfoFor(e.Code).Status)
	require.Equal(t, "Your monthly allowance on your organisation's plan (plus) is $20, and $19.99 of it is spent or held by calls "+
		"in flight: what is left cannot pay for this call, and nothing was billed. The allowance resets on 2026-08-01 (UTC).", e.Message)
	require.Contains(t, core.PlanLimitReached(core.Plans{}.Of("gold"), 0, now).Message, "plan (gold) is not configured")

	busy := core.PersonBusy(plus, 5*time.Second)
	require.Equal(t, core.CodeTooManyConcurrent, busy.Code)
	require.Equal(t, 429, core.InfoFor(busy.Code).Status)
	require.Equal(t, 5*time.Second, busy.RetryAfter)
	require.Contains(t, busy.Message, "2 deliberations in flight")
}
