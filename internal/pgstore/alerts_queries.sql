-- Spend alerts (alerts.go; migration 0026).

-- name: AlertSettings
SELECT org_id, budget_micros, percents, floor_micros, webhook_url, webhook_secret
  FROM alert_settings WHERE org_id = $1;

-- name: SetAlertThresholds
INSERT INTO alert_settings (org_id, budget_micros, percents, floor_micros)
VALUES ($1, $2, $3, $4)
ON CONFLICT (org_id) DO UPDATE
   SET budget_micros = excluded.budget_micros, percents = excluded.percents,
       floor_micros = excluded.floor_micros, updated_at = now();

-- name: SetAlertWebhook
INSERT INTO alert_settings (org_id, webhook_url, webhook_secret)
VALUES ($1, $2, $3)
ON CONFLICT (org_id) DO UPDATE
   SET webhook_url = excluded.webhook_url, webhook_secret = excluded.webhook_secret, updated_at = now();

-- name: AlertCrossings
SELECT id, org_id, kind, percent, period, limit_micros, value_micros, crossed_at, delivered_at
  FROM alert_crossings
 WHERE org_id = $1 AND period >= $2::date
 ORDER BY crossed_at DESC, percent DESC
 LIMIT 50;

-- name: AlertObservations
-- Every organisation with a threshold: its settings, the amount the
-- percentages are of (the budget, or the monthly quota), the month's spend
-- from the spend job's sums and the balance. $1 is the month's first day.
SELECT a.org_id, a.budget_micros, a.percents, a.floor_micros, a.webhook_url,
       coalesce(a.budget_micros, nullif(o.monthly_quota_micros, 0)),
       coalesce((SELECT sum(d.billed_micros) FROM daily_spend d
                  WHERE d.org_id = a.org_id AND d.day >= $1::date), 0)::bigint,
       b.balance_micros
  FROM alert_settings a
  JOIN orgs o ON o.id = a.org_id
  JOIN balances b ON b.org_id = a.org_id
 WHERE cardinality(a.percents) > 0 OR a.floor_micros IS NOT NULL;

-- name: InsertAlertCrossing
INSERT INTO alert_crossings (id, org_id, kind, percent, period, limit_micros, value_micros, crossed_at)
VALUES ($1, $2, $3, $4, $5::date, $6, $7, $8)
ON CONFLICT (org_id, kind, percent, period) DO NOTHING;

-- name: AlertDelivery
-- A crossing to post and where: the organisation's webhook as it is now.
SELECT c.id, c.org_id, c.kind, c.percent, c.period, c.limit_micros, c.value_micros, c.crossed_at, c.delivered_at,
       coalesce(a.webhook_url, ''), coalesce(a.webhook_secret, '')
  FROM alert_crossings c LEFT JOIN alert_settings a ON a.org_id = c.org_id
 WHERE c.id = $1;

-- name: MarkAlertDelivered
UPDATE alert_crossings SET delivered_at = now() WHERE id = $1 AND delivered_at IS NULL;
