-- Organisations, their balances and journal, and API keys.

CREATE TABLE orgs (
    id           text PRIMARY KEY,
    name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    ticker       text NOT NULL UNIQUE CHECK (ticker ~ '^[A-Z]{4}$'),
    plan         text NOT NULL DEFAULT 'standard' CHECK (plan <> ''),
    suspended_at timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- One money row per organisation. Amounts are integer micro-USD.
CREATE TABLE balances (
    org_id                 text PRIMARY KEY REFERENCES orgs (id),
    balance_micros         bigint NOT NULL DEFAULT 0 CHECK (balance_micros >= 0),
    held_micros            bigint NOT NULL DEFAULT 0 CHECK (held_micros >= 0),
    trial_remaining_micros bigint NOT NULL DEFAULT 0 CHECK (trial_remaining_micros >= 0),
    updated_at             timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT held_within_balance CHECK (held_micros <= balance_micros),
    CONSTRAINT trial_within_balance CHECK (trial_remaining_micros <= balance_micros)
);

-- The append-only double-entry journal. A posting is one balanced
-- transaction; its legs sum to zero (checked at commit).
CREATE TABLE postings (
    id         bigserial PRIMARY KEY,
    kind       text NOT NULL,
    org_id     text REFERENCES orgs (id),
    memo       text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE journal_legs (
    id            bigserial PRIMARY KEY,
    posting_id    bigint NOT NULL REFERENCES postings (id),
    account       text NOT NULL,
    org_id        text REFERENCES orgs (id),
    amount_micros bigint NOT NULL CHECK (amount_micros <> 0)
);
CREATE INDEX journal_legs_posting ON journal_legs (posting_id);
CREATE INDEX journal_legs_org_account ON journal_legs (org_id, account);

CREATE FUNCTION journal_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the journal is append-only: % on % refused', TG_OP, TG_TABLE_NAME;
END $$;

CREATE TRIGGER postings_append_only BEFORE UPDATE OR DELETE ON postings
    FOR EACH ROW EXECUTE FUNCTION journal_append_only();
CREATE TRIGGER journal_legs_append_only BEFORE UPDATE OR DELETE ON journal_legs
    FOR EACH ROW EXECUTE FUNCTION journal_append_only();

CREATE FUNCTION journal_posting_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    pid   bigint;
    total bigint;
    legs  int;
BEGIN
    IF TG_TABLE_NAME = 'postings' THEN pid := NEW.id; ELSE pid := NEW.posting_id; END IF;
    SELECT coalesce(sum(amount_micros), 0), count(*) INTO total, legs
      FROM journal_legs WHERE posting_id = pid;
    IF total <> 0 OR legs < 2 THEN
        RAISE EXCEPTION 'posting % is unbalanced: % legs summing to %', pid, legs, total;
    END IF;
    RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER postings_balanced AFTER INSERT ON postings
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION journal_posting_balanced();
CREATE CONSTRAINT TRIGGER journal_legs_balanced AFTER INSERT ON journal_legs
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION journal_posting_balanced();

-- API keys, stored only as the SHA-256 of the secret.
CREATE TABLE api_keys (
    id               text PRIMARY KEY,
    org_id           text NOT NULL REFERENCES orgs (id),
    hash             bytea NOT NULL UNIQUE CHECK (length(hash) = 32),
    hint             text NOT NULL,
    name             text NOT NULL DEFAULT '',
    test             boolean NOT NULL DEFAULT false,
    scopes           text[] NOT NULL,
    modes            text[] NOT NULL DEFAULT '{}',
    rpm              int CHECK (rpm > 0),
    concurrency      int CHECK (concurrency > 0),
    max_input_tokens int CHECK (max_input_tokens > 0),
    ceiling_micros   bigint CHECK (ceiling_micros > 0),
    expires_at       timestamptz,
    revoked_at       timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX api_keys_org ON api_keys (org_id);
