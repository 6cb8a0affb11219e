-- Plans: a connected app's calls are a person's plan usage (docs/plans.md).
-- Two limits bind them beside the organisation's, counted here so that they
-- hold across replicas: the person's calls in flight, and what the person
-- spends in a calendar month (UTC) — the monthly allowance. Every other call
-- passes admit_call exactly as before (the new parameters default to "not a
-- plan's call"), and writes and frees what it did.

-- The person's slots: a person whose plan allows N calls in flight has
-- slots 0..N-1 under their organisation, each held by one call's lease, as
-- concurrency_slots holds the organisation's (0003, 0008, 0011). A table of
-- its own rather than rows of concurrency_slots keyed by the person: that
-- table's rows are the organisation's slots (its key is the organisation's
-- id and the slot), read as such by take_slot's count; a person's slots
-- beside them would need a second meaning for its org_id. UNLOGGED for the
-- same reason concurrency_slots is (0011): a lease on a call in flight, and
-- nothing else depends on it.
CREATE UNLOGGED TABLE person_slots (
    org_id      text NOT NULL,
    person_id   text NOT NULL,
    slot        int NOT NULL CHECK (slot >= 0),
    request_id  text NOT NULL,
    lease_until timestamptz NOT NULL,
    PRIMARY KEY (org_id, person_id, slot)
);
CREATE INDEX person_slots_request ON person_slots (request_id);

-- A hold of plan usage is the person's: the allowance adds up the person's
-- holds of the month, settled bills and live holds, as the organisation's
-- monthly quota adds up the organisation's. NULL for every other hold, so
-- the partial index costs them nothing.
ALTER TABLE holds ADD COLUMN person_id text;
CREATE INDEX holds_person_created ON holds (person_id, created_at) WHERE person_id IS NOT NULL;

-- take_person_slot leases one of the person's slots 0..p_limit-1 to
-- p_request_id until p_until and returns its number, or NULL when every
-- slot is leased. take_slot's probes (0008) without its random probes for
-- large limits: a plan's limit is small (docs/plans.md bounds it). A failed
-- probe locks nothing; the only row a call locks is the slot it takes.
CREATE FUNCTION take_person_slot(p_org_id text, p_person_id text, p_request_id text, p_limit int, p_until timestamptz)
RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    v_slot int;
BEGIN
    FOR attempt IN 1..8 LOOP
        SELECT s INTO v_slot
          FROM generate_series(0, p_limit - 1) s
         WHERE NOT EXISTS (SELECT 1 FROM person_slots c
                            WHERE c.org_id = p_org_id AND c.person_id = p_person_id AND c.slot = s
                              AND c.lease_until > clock_timestamp())
         ORDER BY random() LIMIT 1;
        IF NOT FOUND THEN
            RETURN NULL;
        END IF;
        INSERT INTO person_slots (org_id, person_id, slot, request_id, lease_until)
        VALUES (p_org_id, p_person_id, v_slot, p_request_id, p_until)
        ON CONFLICT (org_id, person_id, slot) DO NOTHING;
        IF FOUND THEN
            RETURN v_slot;
        END IF;
        UPDATE person_slots c SET request_id = p_request_id, lease_until = p_until
         WHERE c.org_id = p_org_id AND c.person_id = p_person_id AND c.slot = v_slot
           AND c.lease_until <= clock_timestamp();
        IF FOUND THEN
            RETURN v_slot;
        END IF;
    END LOOP;
    RETURN NULL;
END $$;

-- admit_call: as in 0009, and for a person's plan usage (p_person_id set):
--
-- 2a. Before the organisation's slot, one of the person's p_person_slots
--     (when positive); none free: outcome person_busy, nothing written.
-- 4.  The hold is the person's (holds.person_id).
-- 6.  Under the balance row's lock — which every admission of the
--     organisation takes, so that the person's concurrent calls are
--     counted one after another, across replicas — the person's spend this
--     month (p_month_start: settled bills and live holds, this hold left
--     out) is read, and the hold is lowered, never raised, to what is left
--     of p_person_allowance. When that is zero or less, or below
--     p_min_amount, the outcome is plan_limit (spent says how much is
--     taken). The lowered amount is what the quota, the activation
--     allowance and the balance then see, and hold_amount returns it.
--
-- The new parameters default to a call that is not plan usage, so that a
-- replica still running the previous code (14 arguments) calls this one
-- unchanged while replicas roll over.
DROP FUNCTION admit_call(text, bigint, bigint, text, text, int, bigint, text, bytea, text, bigint, bigint, bigint, timestamptz);

CREATE FUNCTION admit_call(
    p_key_id text, p_interval_us bigint, p_tolerance_us bigint,
    p_org_id text, p_request_id text, p_slot_limit int, p_lease_us bigint,
    p_idem_key text, p_request_hash bytea,
    p_hold_id text, p_amount bigint, p_quota bigint, p_allowance bigint, p_month_start timestamptz,
    p_person_id text DEFAULT '', p_person_slots int DEFAULT 0,
    p_person_allowance bigint DEFAULT NULL, p_min_amount bigint DEFAULT 0,
    OUT outcome text, OUT wait_us bigint, OUT claim_state text, OUT claim_request_id text, OUT claim_request_hash bytea,
    OUT spent bigint, OUT hold_created_at timestamptz, OUT hold_expires_at timestamptz, OUT hold_amount bigint
) LANGUAGE plpgsql AS $$
DECLARE
    v_now   timestamptz := clock_timestamp();
    v_lease interval := p_lease_us * interval '1 microsecond';
    v_rate  interval := p_interval_us * interval '1 microsecond';
    v_tol   interval := p_tolerance_us * interval '1 microsecond';
    v_slot  int;
    v_topped boolean;
    v_expired boolean;
    v_trial bigint;
    v_amount bigint := p_amount;
BEGIN
    -- Only reservations are written here; see 0007_hot_rows.sql.
    PERFORM set_config('synchronous_commit', 'off', true);

    -- 1. The key's rate (GCRA, the whole minute's budget at once), read
    -- without a lock: a key over its rate is refused before any write.
    IF p_interval_us > 0 THEN
        SELECT greatest(0, extract(epoch FROM (r.tat - v_now)) * 1e6 - p_tolerance_us)::bigint
          INTO wait_us FROM rate_limits r WHERE r.key_id = p_key_id AND r.tat - v_now > v_tol;
        IF FOUND THEN
            outcome := 'rate_limited';
            RETURN;
        END IF;
    END IF;

    -- 2a. One of the person's slots (plan usage only).
    IF p_person_slots > 0 THEN
        v_slot := take_person_slot(p_org_id, p_person_id, p_request_id, p_person_slots, v_now + v_lease);
        IF v_slot IS NULL THEN
            outcome := 'person_busy';
            RETURN;
        END IF;
    END IF;

    -- 2. A concurrency slot of 0..p_slot_limit-1 (take_slot).
    IF p_slot_limit > 0 THEN
        v_slot := take_slot(p_org_id, p_request_id, p_slot_limit, v_now + v_lease);
        IF v_slot IS NULL THEN
            IF p_person_slots > 0 THEN
                DELETE FROM person_slots WHERE request_id = p_request_id;
            END IF;
            outcome := 'no_slot';
            RETURN;
        END IF;
    END IF;

    -- 3. The idempotency claim: a new key, a capped one, or one whose
    -- in-flight lease lapsed is taken; otherwise the holder is reported.
    IF p_idem_key <> '' THEN
        FOR attempt IN 1..3 LOOP
            INSERT INTO idempotency_keys AS k (org_id, key, request_hash, request_id, state, locked_until)
            VALUES (p_org_id, p_idem_key, p_request_hash, p_request_id, 'in_flight', v_now + v_lease)
            ON CONFLICT (org_id, key) DO UPDATE
               SET request_hash = EXCLUDED.request_hash, request_id = EXCLUDED.request_id, state = 'in_flight',
                   locked_until = EXCLUDED.locked_until, created_at = now(), updated_at = now()
             WHERE k.state = 'capped' OR (k.state = 'in_flight' AND k.locked_until <= clock_timestamp());
            IF FOUND THEN
                EXIT;
            END IF;
            SELECT k.state, k.request_id, k.request_hash INTO claim_state, claim_request_id, claim_request_hash
              FROM idempotency_keys k WHERE k.org_id = p_org_id AND k.key = p_idem_key;
            IF FOUND THEN
                DELETE FROM concurrency_slots WHERE request_id = p_request_id;
                IF p_person_slots > 0 THEN
                    DELETE FROM person_slots WHERE request_id = p_request_id;
                END IF;
                outcome := 'claimed';
                RETURN;
            END IF;
            -- The holder's row went away (its call failed): try again.
        END LOOP;
    END IF;

    -- 4. The hold, before the balance that pays for it is checked.
    IF p_amount > 0 THEN
        INSERT INTO holds (id, org_id, request_id, amount_micros, expires_at, person_id)
        VALUES (p_hold_id, p_org_id, p_request_id, p_amount, v_now + v_lease, nullif(p_person_id, ''))
        RETURNING created_at, expires_at INTO hold_created_at, hold_expires_at;
    END IF;

    -- 5. The rate, taken: the first shared row.
    IF p_interval_us > 0 THEN
        INSERT INTO rate_limits AS r (key_id, tat)
        VALUES (p_key_id, v_now + v_rate)
        ON CONFLICT (key_id) DO UPDATE
           SET tat = greatest(r.tat, v_now) + v_rate
         WHERE r.tat - v_now <= v_tol;
        IF NOT FOUND THEN
            SELECT greatest(0, extract(epoch FROM (r.tat - v_now)) * 1e6 - p_tolerance_us)::bigint
              INTO wait_us FROM rate_limits r WHERE r.key_id = p_key_id;
            outcome := 'rate_limited';
        END IF;
    END IF;

    -- 6. The spend rules, read under the balance row's lock, and the
    -- balance: the second shared row, the last write before the commit.
    IF outcome IS NULL AND p_amount > 0 THEN
        IF p_quota IS NOT NULL OR p_allowance > 0 OR p_person_allowance IS NOT NULL THEN
            PERFORM 1 FROM balances WHERE org_id = p_org_id FOR UPDATE;
            IF p_person_allowance IS NOT NULL THEN
                SELECT coalesce(sum(CASE h.state WHEN 'settled' THEN h.billed_micros WHEN 'held' THEN h.amount_micros ELSE 0 END), 0)::bigint
                  INTO spent FROM holds h
                 WHERE h.person_id = p_person_id AND h.created_at >= p_month_start
                   AND h.org_id = p_org_id AND h.id <> p_hold_id;
                v_amount := least(p_amount, p_person_allowance - spent);
                IF v_amount <= 0 OR v_amount < p_min_amount THEN
                    outcome := 'plan_limit';
                ELSIF v_amount < p_amount THEN
                    UPDATE holds SET amount_micros = v_amount WHERE id = p_hold_id;
                END IF;
            END IF;
            IF outcome IS NULL AND p_quota IS NOT NULL THEN
                SELECT coalesce(sum(CASE h.state WHEN 'settled' THEN h.billed_micros WHEN 'held' THEN h.amount_micros ELSE 0 END), 0)::bigint
                  INTO spent FROM holds h WHERE h.org_id = p_org_id AND h.created_at >= p_month_start AND h.id <> p_hold_id;
                IF spent + v_amount > p_quota THEN
                    outcome := 'quota';
                END IF;
            END IF;
            IF outcome IS NULL AND p_allowance > 0 THEN
                SELECT coalesce(sum(CASE h.state WHEN 'settled' THEN h.billed_micros WHEN 'held' THEN h.amount_micros ELSE 0 END), 0)::bigint
                  INTO spent FROM holds h WHERE h.org_id = p_org_id AND h.id <> p_hold_id;
                IF spent + v_amount > p_allowance THEN
                    outcome := 'allowance';
                END IF;
            END IF;
        END IF;
        IF outcome IS NULL THEN
            UPDATE balances SET held_micros = held_micros + v_amount, updated_at = now()
             WHERE org_id = p_org_id AND balance_micros - held_micros >= v_amount;
            IF NOT FOUND THEN
                SELECT b.topped_up, b.trial_expired_at IS NOT NULL, b.trial_remaining_micros
                  INTO v_topped, v_expired, v_trial FROM balances b WHERE b.org_id = p_org_id;
                IF NOT FOUND THEN
                    outcome := 'no_org';
                ELSIF NOT v_topped AND v_expired AND v_trial = 0 THEN
                    outcome := 'no_billing';
                ELSE
                    outcome := 'insufficient';
                END IF;
            END IF;
        END IF;
    END IF;

    IF outcome IS NOT NULL THEN
        -- Refused after the call's own rows were written: remove them.
        DELETE FROM concurrency_slots WHERE request_id = p_request_id;
        IF p_person_slots > 0 THEN
            DELETE FROM person_slots WHERE request_id = p_request_id;
        END IF;
        DELETE FROM idempotency_keys
         WHERE org_id = p_org_id AND key = p_idem_key AND request_id = p_request_id AND state = 'in_flight';
        DELETE FROM holds WHERE id = p_hold_id;
        RETURN;
    END IF;
    IF p_amount > 0 THEN
        hold_amount := v_amount;
    END IF;
    outcome := 'ok';
END $$;

-- settle_call: as in 0007, and the person's slot freed with the
-- organisation's when the hold is a person's (plan usage only: other
-- settlements run exactly the statements they did).
CREATE OR REPLACE FUNCTION settle_call(
    p_hold_id text, p_org_id text, p_request_id text, p_billed bigint, p_idem_key text, p_claim_state text,
    OUT request_id text, OUT balance_micros bigint, OUT held_micros bigint,
    OUT trial_remaining_micros bigint, OUT updated_at timestamptz
) LANGUAGE plpgsql AS $$
DECLARE
    v_amount bigint;
    v_posting bigint;
    v_person text;
BEGIN
    UPDATE holds h SET state = 'settled', billed_micros = p_billed, settled_at = now()
     WHERE h.id = p_hold_id AND h.org_id = p_org_id AND h.state = 'held'
    RETURNING h.request_id, h.amount_micros, h.person_id INTO request_id, v_amount, v_person;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'hold % is not live', p_hold_id USING ERRCODE = 'CC001';
    END IF;
    IF p_request_id <> '' AND request_id <> p_request_id THEN
        RAISE EXCEPTION 'hold % is for request %, not %', p_hold_id, request_id, p_request_id USING ERRCODE = 'CC003';
    END IF;
    IF p_idem_key <> '' THEN
        UPDATE idempotency_keys k SET state = p_claim_state, updated_at = now()
         WHERE k.org_id = p_org_id AND k.key = p_idem_key AND k.request_id = settle_call.request_id AND k.state = 'in_flight';
        IF NOT FOUND THEN
            RAISE EXCEPTION 'the idempotency claim on % is no longer this call''s', p_idem_key USING ERRCODE = 'CC002';
        END IF;
    END IF;
    DELETE FROM concurrency_slots c WHERE c.request_id = settle_call.request_id;
    IF v_person IS NOT NULL THEN
        DELETE FROM person_slots c WHERE c.request_id = settle_call.request_id;
    END IF;
    IF p_billed > 0 THEN
        INSERT INTO postings (kind, org_id, memo) VALUES ('call_charge', p_org_id, 'call ' || request_id)
        RETURNING id INTO v_posting;
        INSERT INTO journal_legs (posting_id, account, org_id, amount_micros)
        VALUES (v_posting, 'org_balance', p_org_id, -p_billed), (v_posting, 'revenue', NULL, p_billed);
    END IF;
    UPDATE balances b
       SET held_micros = b.held_micros - v_amount,
           balance_micros = b.balance_micros - p_billed,
           trial_remaining_micros = b.trial_remaining_micros - least(b.trial_remaining_micros, p_billed),
           updated_at = now()
     WHERE b.org_id = p_org_id
    RETURNING b.balance_micros, b.held_micros, b.trial_remaining_micros, b.updated_at
      INTO balance_micros, held_micros, trial_remaining_micros, updated_at;
END $$;
