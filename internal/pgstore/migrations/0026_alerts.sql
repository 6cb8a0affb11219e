-- Spend alerts (docs/dashboard.md#spend-alerts, docs/api.md#spend-alert-webhooks):
-- an organisation's thresholds and webhook, and each threshold crossed.
--
-- Nothing here is read or written by a billed call: the alert job
-- (internal/jobs, every alerts.interval) reads the balance and the month's
-- daily_spend sums of the organisations that have alert_settings, and
-- inserts a crossing with ON CONFLICT DO NOTHING, so that each threshold is
-- recorded once per organisation, kind and calendar month (UTC) however
-- often the job runs and on however many replicas. The crossing's webhook
-- delivery job is inserted in the same transaction.

CREATE TABLE alert_settings (
    org_id               text PRIMARY KEY REFERENCES orgs (id),
    -- the monthly budget the percentages are of; NULL: the monthly quota
    budget_micros        bigint CHECK (budget_micros > 0),
    percents             int[] NOT NULL DEFAULT '{}',
    -- an alert when the balance is below it; NULL: none
    floor_micros         bigint CHECK (floor_micros > 0),
    webhook_url          text NOT NULL DEFAULT '',
    -- the HMAC key of the webhook's signatures, shown to the owner once
    -- (docs/rationale.md: why it is stored as it is)
    webhook_secret       text NOT NULL DEFAULT '',
    updated_at           timestamptz NOT NULL DEFAULT now(),
    CHECK ((webhook_url = '') = (webhook_secret = ''))
);

CREATE TABLE alert_crossings (
    id            text PRIMARY KEY,             -- the event id (evt_…)
    org_id        text NOT NULL REFERENCES orgs (id),
    kind          text NOT NULL CHECK (kind IN ('monthly_spend', 'balance')),
    percent       int NOT NULL DEFAULT 0,       -- 0 for the balance floor
    period        date NOT NULL,                -- the month's first day (UTC)
    limit_micros  bigint NOT NULL,              -- the budget or the floor
    value_micros  bigint NOT NULL,              -- the spend or the balance seen
    crossed_at    timestamptz NOT NULL DEFAULT now(),
    delivered_at  timestamptz,
    UNIQUE (org_id, kind, percent, period)
);
