-- Benchmark runs (POST /v1/tests, POST /v1/certify; core/bench/runs): the
-- Idempotency-Key claims of the launch endpoints, the batches, their
-- questions and the judges' judgments.
--
-- A launch is one transaction: its charge (a posting and a hold settled at
-- once, so that the spend rules, which add up holds, count it), its batch,
-- its questions and one River job per question, and its claim moved to
-- 'launched'. The claim itself is written before, in a transaction of its
-- own, so that a repeat of the key can tell an attempt still launching
-- ('in_flight', within its lease) from one that stopped before its launch
-- committed (past its lease, then 'stopped' for good).

CREATE TABLE batch_launches (
    org_id       text NOT NULL REFERENCES orgs (id),
    key          text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    kind         text NOT NULL CHECK (kind IN ('test', 'certify')),
    request_hash bytea NOT NULL CHECK (length(request_hash) = 32),
    batch_id     uuid NOT NULL,
    state        text NOT NULL CHECK (state IN ('in_flight', 'launched', 'stopped')),
    locked_until timestamptz NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, key)
);

-- A batch's status moves queued → running → complete | failed, never back
-- (core/bench/runs.Status; the store's updates are conditional on the
-- status moved from). Its counters are moved by the same statements that
-- move its questions, each question counted once.
CREATE TABLE batches (
    id               uuid PRIMARY KEY,
    org_id           text NOT NULL REFERENCES orgs (id),
    kind             text NOT NULL CHECK (kind IN ('test', 'certify')),
    model            text NOT NULL,
    mode_id          text NOT NULL,
    mode_key         text NOT NULL,
    mode_version     integer NOT NULL CHECK (mode_version >= 0),
    mode_config_hash text NOT NULL,
    plan             jsonb NOT NULL,
    protocol         text NOT NULL CHECK (protocol IN ('pairwise', 'plurality')),
    judges           text[] NOT NULL CHECK (cardinality(judges) BETWEEN 1 AND 3),
    judge_repeats    integer NOT NULL CHECK (judge_repeats BETWEEN 1 AND 3),
    draw_seed        bigint NOT NULL,
    bank_version     text NOT NULL,
    quote            jsonb NOT NULL,
    billed_micros    bigint NOT NULL CHECK (billed_micros >= 0),
    attempt          integer CHECK (attempt >= 1),
    status           text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'complete', 'failed')),
    total            integer NOT NULL CHECK (total BETWEEN 1 AND 300),
    answered         integer NOT NULL DEFAULT 0 CHECK (answered >= 0),
    judged           integer NOT NULL DEFAULT 0 CHECK (judged >= 0),
    failed           integer NOT NULL DEFAULT 0 CHECK (failed >= 0),
    result           jsonb,
    certification    jsonb,
    failure          text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz,
    CONSTRAINT attempt_for_certify CHECK ((kind = 'certify') = (attempt IS NOT NULL)),
    CONSTRAINT counts_within_total CHECK (answered <= total AND judged + failed <= total),
    CONSTRAINT started_when_running CHECK ((status = 'queued') = (started_at IS NULL)),
    CONSTRAINT finished_when_final CHECK ((status IN ('complete', 'failed')) = (finished_at IS NOT NULL)),
    CONSTRAINT result_when_complete CHECK ((status = 'complete') = (result IS NOT NULL))
);
-- The daily launch limits: an organisation's batches of a kind by age.
CREATE INDEX batches_org_kind_created ON batches (org_id, kind, created_at);
-- A certification's attempt is numbered among its mode version's.
CREATE UNIQUE INDEX batches_certify_attempt ON batches (mode_id, mode_version, attempt) WHERE kind = 'certify';

-- One row per question of a batch: the bank's question asked at a tier,
-- its two answers (each recorded once: text, engine, tokens, cost,
-- latency) and where it stands.
CREATE TABLE batch_questions (
    batch_id        uuid NOT NULL REFERENCES batches (id),
    index           integer NOT NULL CHECK (index >= 0),
    bucket          text NOT NULL CHECK (bucket IN ('light', 'medium', 'hard')),
    tier            text NOT NULL CHECK (tier IN ('experience', 'plus', 'pro')),
    question_id     text NOT NULL,
    mode_answer     jsonb,
    baseline_answer jsonb,
    answered_at     timestamptz,
    state           text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'judged', 'failed')),
    failure         text,
    finished_at     timestamptz,
    PRIMARY KEY (batch_id, index),
    CONSTRAINT answered_when_both CHECK ((answered_at IS NOT NULL) = (mode_answer IS NOT NULL AND baseline_answer IS NOT NULL)),
    CONSTRAINT judged_when_answered CHECK (state <> 'judged' OR answered_at IS NOT NULL),
    CONSTRAINT finished_when_done CHECK ((state = 'pending') = (finished_at IS NULL))
);

-- One row per judge, repeat and question: the key makes a question judged
-- once by each judge in each repeat, however many times its job runs.
CREATE TABLE batch_judgments (
    batch_id     uuid NOT NULL,
    index        integer NOT NULL,
    judge        text NOT NULL,
    repeat       integer NOT NULL CHECK (repeat BETWEEN 1 AND 3),
    answer_order text[] NOT NULL,
    verdict      text NOT NULL CHECK (verdict IN ('mode', 'baseline', 'tie', 'missing')),
    detail       jsonb,
    cost_micros  bigint NOT NULL CHECK (cost_micros >= 0),
    latency_us   bigint NOT NULL CHECK (latency_us >= 0),
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (batch_id, index, judge, repeat),
    FOREIGN KEY (batch_id, index) REFERENCES batch_questions (batch_id, index)
);
