-- Slot probes that hold no lock.
--
-- admit_call probed a slot with INSERT … ON CONFLICT DO UPDATE … WHERE the
-- lease has lapsed. When the WHERE is false PostgreSQL still locks the
-- conflicting row, until the transaction ends; a call that probed a taken
-- slot and went on to another kept that lock, so two calls probing each
-- other's slots deadlocked (one of them refused with 40P01). take_slot
-- inserts with ON CONFLICT DO NOTHING, which locks nothing on a conflict,
-- and takes a lapsed slot with an UPDATE whose WHERE re-checks the lease:
-- an UPDATE locks only the rows it changes. A failed probe leaves no lock
-- behind; the only slot row a call locks is the one it takes.

-- take_slot leases one of the organisation's slots 0..p_limit-1 to
-- p_request_id until p_until and returns its number, or NULL when every
-- slot is leased: random probes when the limit is large, else a random pick
-- among the free ones (the scan stops at the number of slot rows + 1, so it
-- follows the calls in flight, not the limit); eight tries in all.
CREATE FUNCTION take_slot(p_org_id text, p_request_id text, p_limit int, p_until timestamptz)
RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    v_slot int;
BEGIN
    FOR attempt IN 1..8 LOOP
        IF p_limit > 64 AND attempt <= 3 THEN
            v_slot := floor(random() * p_limit)::int;
        ELSE
            SELECT s INTO v_slot
              FROM generate_series(0, least(p_limit,
                    (SELECT count(*) FROM concurrency_slots WHERE org_id = p_org_id)::int + 1) - 1) s
             WHERE NOT EXISTS (SELECT 1 FROM concurrency_slots c
                                WHERE c.org_id = p_org_id AND c.slot = s AND c.lease_until > clock_timestamp())
             ORDER BY random() LIMIT 1;
            IF NOT FOUND THEN
                RETURN NULL;
            END IF;
        END IF;
        INSERT INTO concurrency_slots (org_id, slot, request_id, lease_until)
        VALUES (p_org_id, v_slot, p_request_id, p_until)
        ON CONFLICT (org_id, slot) DO NOTHING;
        IF FOUND THEN
            RETURN v_slot;
        END IF;
        UPDATE concurrency_slots c SET request_id = p_request_id, lease_until = p_until
         WHERE c.org_id = p_org_id AND c.slot = v_slot AND c.lease_until <= clock_timestamp();
        IF FOUND THEN
            RETURN v_slot;
        END IF;
    END LOOP;
    RETURN NULL;
END $$;

-- admit_call: as in 0007, with its slot taken by take_slot.
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
    v_topped boolean;
    v_expired boolean;
    v_trial bigint;
BEGIN
    -- Only reservations are written here; see 0007_hot_rows.sql.
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

    -- 2. A concurrency slot of 0..p_slot_limit-1 (take_slot).
    IF p_slot_limit > 0 THEN
        v_slot := take_slot(p_org_id, p_request_id, p_slot_limit, v_now + v_lease);
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
