-- Holds on balances for calls in flight, and the receipts of settled calls.

-- A hold reserves money for one call: balances.held_micros carries the sum of
-- the amounts of every hold in state 'held'. Settling records what was billed,
-- which the database refuses above the hold (billed_within_hold).
CREATE TABLE holds (
    id            text PRIMARY KEY,
    org_id        text NOT NULL REFERENCES orgs (id),
    request_id    text NOT NULL UNIQUE,
    amount_micros bigint NOT NULL CHECK (amount_micros > 0),
    state         text NOT NULL DEFAULT 'held' CHECK (state IN ('held', 'settled', 'released')),
    billed_micros bigint CHECK (billed_micros >= 0),
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    settled_at    timestamptz, -- when the hold left 'held', settled or released
    CONSTRAINT billed_within_hold CHECK (billed_micros <= amount_micros),
    CONSTRAINT billed_only_when_settled CHECK ((state = 'settled') = (billed_micros IS NOT NULL)),
    CONSTRAINT closed_has_time CHECK ((state = 'held') = (settled_at IS NULL))
);
CREATE INDEX holds_org ON holds (org_id);
-- The hold sweeper's scan: live holds by expiry.
CREATE INDEX holds_held_expiry ON holds (expires_at) WHERE state = 'held';

-- One receipt per settled call. Money is integer micro-USD.
CREATE TABLE receipts (
    request_id              text PRIMARY KEY,
    org_id                  text NOT NULL REFERENCES orgs (id),
    hold_id                 text REFERENCES holds (id),
    mode_id                 text NOT NULL,
    mode_key                text NOT NULL,
    mode_config_hash        text NOT NULL,
    status                  text NOT NULL,
    billed_micros           bigint NOT NULL CHECK (billed_micros >= 0),
    token_charge_micros     bigint NOT NULL CHECK (token_charge_micros >= 0),
    surcharge_micros        bigint NOT NULL CHECK (surcharge_micros >= 0),
    platform_fee_micros     bigint NOT NULL CHECK (platform_fee_micros >= 0),
    cap_credit_micros       bigint CHECK (cap_credit_micros >= 0), -- NULL: no credit recorded
    prompt_tokens           int NOT NULL CHECK (prompt_tokens >= 0),
    completion_tokens       int NOT NULL CHECK (completion_tokens >= 0),
    rounds                  int,
    seat_count              int NOT NULL CHECK (seat_count >= 0),
    payer                   text NOT NULL,
    lane                    text CHECK (lane IN ('express', 'panel')),
    difficulty_score        double precision CHECK (difficulty_score BETWEEN 0 AND 1),
    task_type               text,
    hallucination_risk      text,
    minority_insight_likely boolean,
    best_seat               jsonb,
    seats_unavailable       jsonb NOT NULL DEFAULT '[]',
    staff_unavailable       jsonb NOT NULL DEFAULT '[]',
    latency_ms              bigint,
    response                jsonb, -- the completion as sent, for replays
    created_at              timestamptz NOT NULL DEFAULT now(),
    completed_at            timestamptz,
    CONSTRAINT bill_adds_up CHECK (
        billed_micros = token_charge_micros + platform_fee_micros + surcharge_micros - coalesce(cap_credit_micros, 0))
);
CREATE INDEX receipts_org_created ON receipts (org_id, created_at);

-- The seat and staff calls of a receipt.
CREATE TABLE receipt_calls (
    request_id       text NOT NULL REFERENCES receipts (request_id),
    kind             text NOT NULL CHECK (kind IN ('seat', 'staff')),
    ordinal          int NOT NULL,
    role             text NOT NULL,
    model_used       text NOT NULL,
    original_model   text,
    fallback_used    boolean,
    judge_score      double precision,
    is_best_seat     boolean,
    round_number     int,
    tokens_in        int NOT NULL CHECK (tokens_in >= 0),
    tokens_out       int NOT NULL CHECK (tokens_out >= 0),
    latency_ms       bigint,
    started_at       timestamptz NOT NULL,
    ended_at         timestamptz NOT NULL,
    source           text NOT NULL,
    real_cost_micros bigint NOT NULL CHECK (real_cost_micros >= 0),
    fee_rate_ppm     int NOT NULL CHECK (fee_rate_ppm BETWEEN 0 AND 1000000), -- 5% = 50000
    fee_micros       bigint NOT NULL CHECK (fee_micros >= 0),
    content          text NOT NULL DEFAULT '',
    PRIMARY KEY (request_id, kind, ordinal)
);
