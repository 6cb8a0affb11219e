-- People (docs/people.md): who signs in, their place and role in each
-- organisation, their passkeys and password, invitations and set-up links,
-- server-side sessions, WebAuthn ceremonies in progress, and sign-in
-- attempt budgets.

CREATE TABLE people (
    id            text PRIMARY KEY,
    email         text NOT NULL UNIQUE CHECK (email = lower(btrim(email)) AND email <> ''),
    name          text NOT NULL,
    -- A PHC string ($argon2id$v=19$m=…,t=…,p=…$salt$hash); NULL: no password.
    password_hash text,
    created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE memberships (
    org_id     text NOT NULL REFERENCES orgs (id),
    person_id  text NOT NULL REFERENCES people (id),
    role       text NOT NULL CHECK (role IN ('owner', 'member')),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, person_id)
);
CREATE INDEX memberships_person ON memberships (person_id);

CREATE TABLE passkeys (
    id            text PRIMARY KEY,
    person_id     text NOT NULL REFERENCES people (id),
    credential_id bytea NOT NULL UNIQUE,
    name          text NOT NULL,
    -- The relying party's record of the credential (public key, sign
    -- count, flags), as the WebAuthn library serialises it.
    credential    bytea NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_used_at  timestamptz
);
CREATE INDEX passkeys_person ON passkeys (person_id);

-- Invitations (kind invite) and set-up links (kind setup), by the SHA-256
-- of their secret. person_id: whom a set-up link is for; for an
-- invitation, the id a new person will get.
CREATE TABLE invitations (
    hash            bytea PRIMARY KEY,
    id              text NOT NULL UNIQUE,
    kind            text NOT NULL CHECK (kind IN ('invite', 'setup')),
    org_id          text REFERENCES orgs (id),
    email           text NOT NULL,
    person_id       text NOT NULL,
    role            text CHECK (role IN ('owner', 'member')),
    created_by_kind text NOT NULL,
    created_by_id   text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    expires_at      timestamptz NOT NULL,
    used_at         timestamptz,
    CHECK (kind = 'setup' OR (org_id IS NOT NULL AND role IS NOT NULL))
);

-- Sessions, by the SHA-256 of the cookie's secret.
CREATE TABLE sessions (
    hash         bytea PRIMARY KEY,
    id           text NOT NULL UNIQUE,
    person_id    text NOT NULL REFERENCES people (id),
    org_id       text NOT NULL DEFAULT '',
    address      text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);
CREATE INDEX sessions_person ON sessions (person_id);

-- WebAuthn ceremonies begun and not yet finished (five minutes at most).
CREATE TABLE webauthn_ceremonies (
    hash       bytea PRIMARY KEY,
    state      bytea NOT NULL,
    expires_at timestamptz NOT NULL
);

-- Sign-in attempt budgets, one GCRA row per subject ("account:<email>",
-- "address:<ip>"): tat is the theoretical arrival time of the next attempt.
-- A row whose tat has passed is a full budget, as no row is, so rows are
-- pruned as they go idle. UNLOGGED like rate_limits: it is written on every
-- attempt, and a crash forgetting the budgets only hands everyone a fresh
-- one, which the next attempts spend again.
CREATE UNLOGGED TABLE signin_attempts (
    subject text PRIMARY KEY,
    tat     timestamptz NOT NULL
);
CREATE INDEX signin_attempts_tat ON signin_attempts (tat);

-- Runs record the person who launched them ('' for a key no person made),
-- so that a member may cancel their own.
ALTER TABLE batches ADD COLUMN person_id text NOT NULL DEFAULT '';

-- spend_signin_attempt spends one attempt against each subject's budget,
-- all or nothing (GCRA: an attempt every p_interval_us, bursts of
-- p_tolerance_us more). It returns 0 when it spent, else the microseconds
-- until every budget has room (and spends nothing). Subjects come sorted,
-- so two calls lock their rows in one order; a missing row is inserted
-- first so that two first attempts on one subject queue on it too. Each
-- call prunes a few idle rows, so unknown emails tried by the thousand
-- leave no lasting rows.
CREATE FUNCTION spend_signin_attempt(p_subjects text[], p_interval_us bigint[], p_tolerance_us bigint[])
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v_now  timestamptz := clock_timestamp();
    v_wait bigint := 0;
    v_tat  timestamptz;
BEGIN
    DELETE FROM signin_attempts
     WHERE subject IN (SELECT subject FROM signin_attempts WHERE tat < v_now
                        ORDER BY tat LIMIT 8 FOR UPDATE SKIP LOCKED);
    FOR i IN 1 .. coalesce(array_length(p_subjects, 1), 0) LOOP
        INSERT INTO signin_attempts (subject, tat) VALUES (p_subjects[i], v_now)
        ON CONFLICT (subject) DO NOTHING;
        SELECT tat INTO v_tat FROM signin_attempts WHERE subject = p_subjects[i] FOR UPDATE;
        -- greatest ignores a NULL v_tat: a row pruned meanwhile was a full
        -- budget.
        v_wait := greatest(v_wait,
            (extract(epoch FROM (greatest(v_tat, v_now) - v_now)) * 1e6)::bigint - p_tolerance_us[i]);
    END LOOP;
    IF v_wait > 0 THEN
        RETURN v_wait;
    END IF;
    FOR i IN 1 .. coalesce(array_length(p_subjects, 1), 0) LOOP
        INSERT INTO signin_attempts (subject, tat)
        VALUES (p_subjects[i], v_now + p_interval_us[i] * interval '1 microsecond')
        ON CONFLICT (subject) DO UPDATE
           SET tat = greatest(signin_attempts.tat, v_now) + p_interval_us[i] * interval '1 microsecond';
    END LOOP;
    RETURN 0;
END $$;
