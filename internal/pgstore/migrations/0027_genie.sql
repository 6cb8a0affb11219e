-- The mode assistant (core/genie; docs/genie.md): the quotes it attaches to
-- a recommended run, which approve_quote launches once, and the
-- conversations it keeps per principal and mode when genie.chat_history is
-- on.
--
-- A quote moves open → launched | used, never back (SettleQuote is
-- conditional on open). approved_at is the approval's record, written
-- before its launch: a quote approved before its expiry may be approved
-- again after it (a launch_failed retry finds its run), and the launch is
-- keyed "quote:<id>" in batch_launches, so that concurrent approvals on
-- several replicas launch one batch.

CREATE TABLE genie_quotes (
    id           text PRIMARY KEY,                  -- qt_…
    org_id       text NOT NULL REFERENCES orgs (id),
    payer        text NOT NULL,                     -- key:… or person:… (genie.PayerOf)
    kind         text NOT NULL CHECK (kind IN ('test', 'certify')),
    request      jsonb NOT NULL,                    -- the launch body, without dry_run
    model        text NOT NULL,
    price_micros bigint NOT NULL CHECK (price_micros >= 0),
    questions    int NOT NULL DEFAULT 0,
    minutes      int NOT NULL DEFAULT 0,
    status       text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'launched', 'used')),
    batch_id     uuid,
    approved_at  timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    CHECK ((status = 'launched') = (batch_id IS NOT NULL))
);

-- One conversation is (org_id, payer, mode_id); Turns reads its newest
-- turns, ReapHistory deletes by age.
CREATE TABLE genie_turns (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org_id   text NOT NULL REFERENCES orgs (id),
    payer    text NOT NULL,
    mode_id  text NOT NULL,
    role     text NOT NULL CHECK (role IN ('user', 'assistant')),
    content  text NOT NULL,
    at       timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX genie_turns_conversation ON genie_turns (org_id, payer, mode_id, id);
CREATE INDEX genie_turns_at ON genie_turns (at);
