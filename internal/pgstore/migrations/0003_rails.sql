-- The safety rails that hold across replicas: idempotency claims, rate
-- limits, concurrency slots, per-organisation spend rules, and the outcome
-- of calls that never convened a panel.

-- One row per (organisation, Idempotency-Key). A claim is 'in_flight' until
-- its call ends: 'succeeded' (replayed from the receipt's stored response),
-- 'capped' (a repeat runs and bills again), or 'stopped' (stopped
-- mid-charge; launch endpoints). A call that fails unbilled deletes its
-- claim, so a retry with the same key runs. locked_until is the in-flight
-- lease: renewed while the call runs, so a claim whose replica died expires.
CREATE TABLE idempotency_keys (
    org_id       text NOT NULL REFERENCES orgs (id),
    key          text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    request_hash bytea NOT NULL CHECK (length(request_hash) = 32),
    request_id   text NOT NULL,
    state        text NOT NULL CHECK (state IN ('in_flight', 'succeeded', 'capped', 'stopped')),
    locked_until timestamptz NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, key)
);
CREATE INDEX idempotency_keys_request ON idempotency_keys (request_id);
-- The reaper's scan: finished claims by age.
CREATE INDEX idempotency_keys_updated ON idempotency_keys (updated_at);

-- GCRA state per API key: the theoretical arrival time of the next request.
-- UNLOGGED: losing it in a crash only forgives a minute of rate limiting.
CREATE UNLOGGED TABLE rate_limits (
    key_id text PRIMARY KEY,
    tat    timestamptz NOT NULL
);

-- Concurrency slots: an organisation with limit N has slots 0..N-1; a call
-- holds one by lease. A crashed replica stops renewing, the lease expires,
-- and the slot is free again.
CREATE TABLE concurrency_slots (
    org_id      text NOT NULL REFERENCES orgs (id),
    slot        int NOT NULL CHECK (slot >= 0),
    request_id  text NOT NULL,
    lease_until timestamptz NOT NULL,
    PRIMARY KEY (org_id, slot)
);
CREATE INDEX concurrency_slots_request ON concurrency_slots (request_id);

-- Per-organisation spend rules and limits. NULL: the service default.
ALTER TABLE orgs
    ADD COLUMN concurrency          int CHECK (concurrency > 0),
    ADD COLUMN monthly_quota_micros bigint CHECK (monthly_quota_micros >= 0),
    ADD COLUMN verified_at          timestamptz;
-- Organisations created before verification existed are verified.
UPDATE orgs SET verified_at = created_at;

-- topped_up: the organisation has added prepaid money at least once (trial
-- credit does not count); trial_expired_at: the trial's unused part was
-- deducted. With neither topped_up nor trial credit left, billing is not
-- configured.
ALTER TABLE balances
    ADD COLUMN topped_up        boolean NOT NULL DEFAULT false,
    ADD COLUMN trial_expired_at timestamptz;
UPDATE balances b SET topped_up = true
 WHERE EXISTS (SELECT 1 FROM postings p WHERE p.org_id = b.org_id AND p.kind = 'top_up');

-- Spend this month and over the organisation's life, read under the
-- balance row's lock when a hold is placed (quota and activation allowance).
CREATE INDEX holds_org_created ON holds (org_id, created_at);

-- Calls that ended without a receipt: estimates, refusals after the request
-- was admitted, failures before or during the panel. GET /v1/receipts
-- answers these with the receipt-unavailable form.
CREATE TABLE call_outcomes (
    request_id text PRIMARY KEY,
    org_id     text NOT NULL REFERENCES orgs (id),
    endpoint   text NOT NULL,
    status     text NOT NULL,
    reason     text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX call_outcomes_org_created ON call_outcomes (org_id, created_at);
