-- The dashboard's reads: who made each call, the record of each call
-- attempt, spend by day, and the indexes its lists page through.
--
-- A receipt now says who called (the API key, the kind of principal, the
-- person behind it) and how the call finished (its finish reason, whether a
-- backup engine's answer was used). They are columns of the one receipt row
-- the settlement already inserts: no statement is added to a billed call.
-- Receipts written before this migration have them null (substituted
-- false).
ALTER TABLE receipts
    ADD COLUMN key_id        text,
    ADD COLUMN payer_kind    text CHECK (payer_kind IN ('api_key', 'session', 'oauth_app')),
    ADD COLUMN person_id     text,
    ADD COLUMN finish_reason text,
    ADD COLUMN substituted   boolean NOT NULL DEFAULT false;

-- The receipts list pages newest first by (created_at, request_id), never
-- by OFFSET: the organisation's index gains the tie-breaker, and a
-- person's receipts (a member sees only their own keys' and sessions')
-- get one of their own.
CREATE INDEX receipts_org_created_id ON receipts (org_id, created_at, request_id);
DROP INDEX receipts_org_created;
CREATE INDEX receipts_org_person_created ON receipts (org_id, person_id, created_at, request_id) WHERE person_id IS NOT NULL;

-- The money page lists an organisation's balance legs newest first by
-- posting: the index that found them by account now also orders them.
CREATE INDEX journal_legs_org_account_posting ON journal_legs (org_id, account, posting_id);
DROP INDEX journal_legs_org_account;

-- Spend by day: per organisation, day (UTC), API key, mode, person and
-- kind of charge ('call', 'test', 'certify'), the charges net of refunds
-- and how many there were. Written only by the spend job from the journal
-- (pgstore.AggregateSpend), which reads postings past its cursor and moves
-- the cursor in the same transaction as the sums: each posting is counted
-- exactly once, across crashes and replicas.
CREATE TABLE daily_spend (
    org_id        text NOT NULL,
    day           date NOT NULL,
    key_id        text NOT NULL DEFAULT '',
    mode          text NOT NULL DEFAULT '',
    person_id     text NOT NULL DEFAULT '',
    kind          text NOT NULL CHECK (kind IN ('call', 'test', 'certify')),
    charges       bigint NOT NULL DEFAULT 0,
    billed_micros bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (org_id, day, key_id, mode, person_id, kind)
);

CREATE TABLE journal_cursors (
    name       text PRIMARY KEY,
    posting_id bigint NOT NULL DEFAULT 0 CHECK (posting_id >= 0),
    updated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO journal_cursors (name) VALUES ('daily_spend');

-- When each key was last used, flushed from memory every few seconds by
-- the replicas that served it (never written by the call itself).
ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;
