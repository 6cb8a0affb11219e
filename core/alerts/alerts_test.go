package alerts_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/alerts"
)

func ptr[T any](v T) *T { return &v }

func TestCrossed(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	base := alerts.Observation{Settings: alerts.Settings{OrgID: "org_1", Percents: []int{80, 90, 100}}, Base: ptr(core.USD(100))}
	percents := func(cs []*alerts.Crossing) (out []int) {
		for _, c := range cs {
			require.Equal(t, alerts.KindMonthlySpend, c.Kind)
			require.Equal(t, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), c.Period)
			out = append(out, c.Percent)
		}
		return out
	}
	for _, tc := range []struct {
		spent core.Micros
		want  []int
	}{
		{core.USD(79) + 999_999, nil},
		{core.USD(80), []int{80}}, // exactly 80% is crossed
		{core.USD(95), []int{80, 90}},
		{core.USD(250), []int{80, 90, 100}},
	} {
		o := base
		o.Spent = tc.spent
		require.Equal(t, tc.want, percents(alerts.Crossed(&o, now)), tc.spent.String())
	}

	o := base
	o.Base, o.Spent = nil, core.USD(1000)
	require.Empty(t, alerts.Crossed(&o, now), "no budget and no quota: no spend alerts")

	o = alerts.Observation{Settings: alerts.Settings{OrgID: "org_1", Floor: ptr(core.USD(10))}, Balance: core.USD(10)}
	require.Empty(t, alerts.Crossed(&o, now), "at the floor is not below it")
	o.Balance--
	cs := alerts.Crossed(&o, now)
	require.Len(t, cs, 1)
	require.Equal(t, alerts.KindBalance, cs[0].Kind)
	require.Equal(t, core.USD(10), cs[0].Limit)
}

func TestSignatureVerifies(t *testing.T) {
	t.Parallel()
	secret := alerts.NewSecret()
	require.Regexp(t, `^whsec_[A-Za-z0-9_-]{43}$`, secret)
	at := time.Unix(1_764_300_000, 0)
	c := &alerts.Crossing{ID: "evt_1", OrgID: "org_1", Kind: alerts.KindMonthlySpend, Percent: 80,
		Period: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), Limit: core.USD(100), Value: core.USD(81), At: at}
	body := alerts.EventOf(c).Body()
	require.JSONEq(t, `{"id":"evt_1","type":"alert.monthly_spend","created_at":"2025-11-28T03:20:00Z","organization":"org_1",
		"period":"2026-11","threshold_percent":80,"budget_usd":100,"spent_usd":81}`, string(body))
	sig := alerts.Sign(secret, at, body)
	require.Regexp(t, `^t=1764300000,v1=[0-9a-f]{64}$`, sig)

	require.NoError(t, alerts.Verify(secret, sig, body, at.Add(time.Minute), 5*time.Minute))
	require.ErrorIs(t, alerts.Verify(alerts.NewSecret(), sig, body, at, 5*time.Minute), alerts.ErrSignature, "another secret")
	require.ErrorIs(t, alerts.Verify(secret, sig, append(body, ' '), at, 5*time.Minute), alerts.ErrSignature, "another body")
	require.ErrorIs(t, alerts.Verify(secret, sig, body, at.Add(time.Hour), 5*time.Minute), alerts.ErrSignature, "too old")
	require.ErrorIs(t, alerts.Verify(secret, "v1=00", body, at, 5*time.Minute), alerts.ErrSignature, "no time")
}
