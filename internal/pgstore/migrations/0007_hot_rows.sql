-- Shorter work under the hot rows of a billed call.
--
-- admit_call commits asynchronously (synchronous_commit off for its
-- transaction only). It writes reservations alone: the rate spent, a slot, an
-- idempotency claim and a hold. If PostgreSQL itself crashes in the instant
-- before that commit reaches disk, the reservation is lost with it, and the
-- call cannot bill: settle_call finds no live hold and refuses, so the call
-- ends unbilled and its key free for a retry. A charge is never committed
-- asynchronously: settle_call commits synchronously, and its commit record
-- comes after the admission's in the log, so once a settlement is durable
-- the admission it settles is too. The caller is answered only after that.
-- Not waiting for the disk also shortens the time the balance and rate rows
-- stay locked by one flush.
--
-- settle_call takes the balance row last, so the organisation's other calls
-- wait on it for as little as possible: only the receipt's statement, sent
-- after it in the same batch, and the commit follow. Slots are found by
-- their request's index (the organisation's slot rows are many when its
-- limit is large).
--
-- The call's own rows lose the foreign keys that the functions writing them
-- already guarantee, because each check is a query of its own on every row
-- (about 15-20 µs each here, a dozen per call). Organisations are never
-- deleted; admit_call is given the authenticated key's organisation, and
-- writes a hold only once it has found that organisation's balance row
-- (otherwise it undoes the slot and claim: outcome no_org); a
-- receipt is written in the transaction whose settle_call found the hold
-- live and the organisation's, with its calls in the same statement. The
-- ledger (postings, journal_legs, balances) keeps all of its keys.
ALTER TABLE holds DROP CONSTRAINT holds_org_id_fkey;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_org_id_fkey;
ALTER TABLE concurrency_slots DROP CONSTRAINT concurrency_slots_org_id_fkey;
ALTER TABLE receipts DROP CONSTRAINT receipts_org_id_fkey;
ALTER TABLE receipts DROP CONSTRAINT receipts_hold_id_fkey;
ALTER TABLE receipt_calls DROP CONSTRAINT receipt_calls_request_id_fkey;

CREATE OR REPLACE FUNCTION admit_call(
    p_key_id text, p_interval_us bigint, p_tolerance_us bigint,
    p_org_id text, p_request_id text, p_slot_limit int, p_lease_us bigint,
    p_idem_key text, p_request_hash bytea,
    p_hold_id text, p_amount bigint, p_quota bigint, p_allowance bigint, p_month_start timestamptz,
    OUT outcome text, OUT wait_us bigint, OUT claim_state text, OUT claim_request_id text, OUT claim_request_hash bytea,
    OUT spent bigint, OUT hold_created_at timestamptz, OUT hold_expires_at timestamptz
) LANGUAGE plpgsql AS $$
DECLARE
    v_now   timestamptz := clock_timestamp();
    v_lease interval := p_lease_us * interval '1 microsecond';
    v_slot  int;
    v_rid   text;
    v_topped boolean;
    v_expired boolean;
    v_trial bigint;
BEGIN
    -- Only reservations are written here; see the header.
    PERFORM set_config('synchronous_commit', 'off', true);

    -- 1. The key's rate: GCRA, the whole minute's budget at once.
    IF p_interval_us > 0 THEN
        INSERT INTO rate_limits AS r (key_id, tat)
        VALUES (p_key_id, v_now + p_interval_us * interval '1 microsecond')
        ON CONFLICT (key_id) DO UPDATE
           SET tat = greatest(r.tat, v_now) + p_interval_us * interval '1 microsecond'
         WHERE r.tat - v_now <= p_tolerance_us * interval '1 microsecond';
        IF NOT FOUND THEN
            SELECT greatest(0, extract(epoch FROM (r.tat - v_now)) * 1e6 - p_tolerance_us)::bigint
              INTO wait_us FROM rate_limits r WHERE r.key_id = p_key_id;
            outcome := 'rate_limited';
            RETURN;
        END IF;
    END IF;

    -- 2. A concurrency slot of 0..p_slot_limit-1: random probes when the
    -- limit is large, else a random pick among the free ones (the scan
    -- stops at the number of slot rows + 1, so it follows the calls in
    -- flight, not the limit).
    IF p_slot_limit > 0 THEN
        FOR attempt IN 1..8 LOOP
            IF p_slot_limit > 64 AND attempt <= 3 THEN
                v_slot := floor(random() * p_slot_limit)::int;
            ELSE
                SELECT s INTO v_slot
                  FROM generate_series(0, least(p_slot_limit,
                        (SELECT count(*) FROM concurrency_slots WHERE org_id = p_org_id)::int + 1) - 1) s
                 WHERE NOT EXISTS (SELECT 1 FROM concurrency_slots c
                                    WHERE c.org_id = p_org_id AND c.slot = s AND c.lease_until > clock_timestamp())
                 ORDER BY random() LIMIT 1;
                IF NOT FOUND THEN
                    outcome := 'no_slot';
                    RETURN;
                END IF;
            END IF;
            INSERT INTO concurrency_slots AS c (org_id, slot, request_id, lease_until)
            VALUES (p_org_id, v_slot, p_request_id, v_now + v_lease)
            ON CONFLICT (org_id, slot) DO UPDATE
               SET request_id = EXCLUDED.request_id, lease_until = EXCLUDED.lease_until
             WHERE c.lease_until <= clock_timestamp();
            IF FOUND THEN
                EXIT;
            END IF;
            v_slot := NULL;
        END LOOP;
        IF v_slot IS NULL THEN
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
                outcome := 'claimed';
                RETURN;
            END IF;
            -- The holder's row went away (its call failed): try again.
        END LOOP;
    END IF;

    -- 4. The spend rules, read under the balance row's lock, and the hold.
    IF p_amount > 0 THEN
        IF p_quota IS NOT NULL OR p_allowance > 0 THEN
            PERFORM 1 FROM balances WHERE org_id = p_org_id FOR UPDATE;
            IF p_quota IS NOT NULL THEN
                SELECT coalesce(sum(CASE h.state WHEN 'settled' THEN h.billed_micros WHEN 'held' THEN h.amount_micros ELSE 0 END), 0)::bigint
                  INTO spent FROM holds h WHERE h.org_id = p_org_id AND h.created_at >= p_month_start;
                IF spent + p_amount > p_quota THEN
                    outcome := 'quota';
                END IF;
            END IF;
            IF outcome IS NULL AND p_allowance > 0 THEN
                SELECT coalesce(sum(CASE h.state WHEN 'settled' THEN h.billed_micros WHEN 'held' THEN h.amount_micros ELSE 0 END), 0)::bigint
                  INTO spent FROM holds h WHERE h.org_id = p_org_id;
                IF spent + p_amount > p_allowance THEN
                    outcome := 'allowance';
                END IF;
            END IF;
        END IF;
        IF outcome IS NULL THEN
            UPDATE balances SET held_micros = held_micros + p_amount, updated_at = now()
             WHERE org_id = p_org_id AND balance_micros - held_micros >= p_amount;
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
        IF outcome IS NOT NULL THEN
            DELETE FROM concurrency_slots WHERE request_id = p_request_id;
            DELETE FROM idempotency_keys
             WHERE org_id = p_org_id AND key = p_idem_key AND request_id = p_request_id AND state = 'in_flight';
            RETURN;
        END IF;
        INSERT INTO holds (id, org_id, request_id, amount_micros, expires_at)
        VALUES (p_hold_id, p_org_id, p_request_id, p_amount, v_now + v_lease)
        RETURNING created_at, expires_at INTO hold_created_at, hold_expires_at;
    END IF;
    outcome := 'ok';
END $$;

-- settle_call: as in 0006, with the balance row taken last.
CREATE OR REPLACE FUNCTION settle_call(
    p_hold_id text, p_org_id text, p_request_id text, p_billed bigint, p_idem_key text, p_claim_state text,
    OUT request_id text, OUT balance_micros bigint, OUT held_micros bigint,
    OUT trial_remaining_micros bigint, OUT updated_at timestamptz
) LANGUAGE plpgsql AS $$
DECLARE
    v_amount bigint;
    v_posting bigint;
BEGIN
    UPDATE holds h SET state = 'settled', billed_micros = p_billed, settled_at = now()
     WHERE h.id = p_hold_id AND h.org_id = p_org_id AND h.state = 'held'
    RETURNING h.request_id, h.amount_micros INTO request_id, v_amount;
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
