package jobs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/alerts"
)

// The alert check records each threshold once per calendar month, however
// often it runs, with one webhook delivery job per crossing in the same
// transaction; a new month starts again.
func TestAlertCheckRecordsEachCrossingOncePerMonth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	org := b.org(t, "Alerted", 0)
	r := b.newRunner(t, Config{})
	budget := core.USD(100)
	require.NoError(t, b.store.SetAlertThresholds(b.ctx, &alerts.Settings{OrgID: org, Budget: &budget, Percents: []int{80, 90, 100}}))
	require.NoError(t, b.store.SetAlertWebhook(b.ctx, org, "https://hooks.example.com/x", alerts.NewSecret()))

	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	spend := func(day time.Time, usd int64) {
		_, err := b.pool.Exec(b.ctx, `INSERT INTO daily_spend (org_id, day, kind, charges, billed_micros) VALUES ($1, $2, 'call', 1, $3)
			ON CONFLICT (org_id, day, key_id, mode, person_id, kind) DO UPDATE SET billed_micros = excluded.billed_micros`,
			org, day, int64(core.USD(usd)))
		require.NoError(t, err)
	}
	check := func(at time.Time) int {
		n, err := r.CheckAlerts(b.ctx, at)
		require.NoError(t, err)
		return n
	}
	spend(now.AddDate(0, -1, 0), 500) // last month's spend counts for nothing now
	spend(now, 79)
	require.Zero(t, check(now))
	spend(now, 85)
	require.Equal(t, 1, check(now), "80% crossed")
	require.Zero(t, check(now), "and recorded once")
	spend(now, 100)
	require.Equal(t, 2, check(now), "90% and 100%")
	require.Zero(t, check(now.Add(time.Hour)))

	next := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	require.Zero(t, check(next), "a new month: nothing spent yet")
	spend(next, 81)
	require.Equal(t, 1, check(next), "80% of the new month")

	cs, err := b.store.AlertCrossings(b.ctx, org, time.Time{})
	require.NoError(t, err)
	require.Len(t, cs, 4)
	var jobs int
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT count(*) FROM river_job WHERE kind = $1", AlertDeliveryArgs{}.Kind()).Scan(&jobs))
	require.Equal(t, 4, jobs, "one delivery per crossing")

	// The balance floor: below it is one crossing a month; without a
	// webhook none is posted.
	require.NoError(t, b.store.SetAlertWebhook(b.ctx, org, "", ""))
	floor := b.balance(t, org).Balance + 1
	require.NoError(t, b.store.SetAlertThresholds(b.ctx, &alerts.Settings{OrgID: org, Floor: &floor}))
	later := next.Add(time.Minute)
	require.Equal(t, 1, check(later))
	require.Zero(t, check(later))
	cs, err = b.store.AlertCrossings(b.ctx, org, core.MonthStart(next))
	require.NoError(t, err)
	require.Equal(t, alerts.KindBalance, cs[0].Kind)
	require.Equal(t, floor, cs[0].Limit)
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT count(*) FROM river_job WHERE kind = $1", AlertDeliveryArgs{}.Kind()).Scan(&jobs))
	require.Equal(t, 4, jobs, "no webhook, no delivery")
}
