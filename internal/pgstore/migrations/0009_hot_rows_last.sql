-- Hot rows locked last, for as short a time as possible.
--
-- Every billed call of a key updates one rate row, and every call of an
-- organisation its balance row, twice: at admission and at settlement. A
-- row an UPDATE changed stays locked until its transaction ends, so these
-- two rows serialise the organisation's calls for as long as each
-- transaction holds them. admit_call (0008) took the rate row first and
-- held it through the slot, the claim, the balance and the hold; the
-- settlement held the balance row through the receipt's statement. Seen from PostgreSQL at 500 calls/s of one key,
-- the rate row's one-row upsert and the balance updates took 75-105 µs
-- each on average, nearly all of it waiting for the row.
--
-- admit_call now writes the call's own rows first (slot, claim, hold) and
-- the two shared rows last, rate then balance, just before its commit. The
-- refusals keep their order: the rate is read first without a lock, and a
-- key found over its rate is refused before anything is written; a call
-- that passes that read but loses the rate to a concurrent call when it
-- takes it is refused the same way, its slot, claim and hold removed. The
-- hold is written before the balance is checked and removed when the
-- balance refuses; the spend rules leave the call's own hold out.
--
-- SettleCall sends the receipt's statement before settle_call, whose last
-- write is already the balance row, so that row is the last thing the
-- settlement's transaction writes before it commits.

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
    v_rate  interval := p_interval_us * interval '1 microsecond';
    v_tol   interval := p_tolerance_us * interval '1 microsecond';
    v_slot  int;
    v_topped boolean;
    v_expired boolean;
    v_trial bigint;
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

    -- 4. The hold, before the balance that pays for it is checked.
    IF p_amount > 0 THEN
        INSERT INTO holds (id, org_id, request_id, amount_micros, expires_at)
        VALUES (p_hold_id, p_org_id, p_request_id, p_amount, v_now + v_lease)
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
        IF p_quota IS NOT NULL OR p_allowance > 0 THEN
            PERFORM 1 FROM balances WHERE org_id = p_org_id FOR UPDATE;
            IF p_quota IS NOT NULL THEN
                SELECT coalesce(sum(CASE h.state WHEN 'settled' THEN h.billed_micros WHEN 'held' THEN h.amount_micros ELSE 0 END), 0)::bigint
                  INTO spent FROM holds h WHERE h.org_id = p_org_id AND h.created_at >= p_month_start AND h.id <> p_hold_id;
                IF spent + p_amount > p_quota THEN
                    outcome := 'quota';
                END IF;
            END IF;
            IF outcome IS NULL AND p_allowance > 0 THEN
                SELECT coalesce(sum(CASE h.state WHEN 'settled' THEN h.billed_micros WHEN 'held' THEN h.amount_micros ELSE 0 END), 0)::bigint
                  INTO spent FROM holds h WHERE h.org_id = p_org_id AND h.id <> p_hold_id;
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
    END IF;

    IF outcome IS NOT NULL THEN
        -- Refused after the call's own rows were written: remove them.
        DELETE FROM concurrency_slots WHERE request_id = p_request_id;
        DELETE FROM idempotency_keys
         WHERE org_id = p_org_id AND key = p_idem_key AND request_id = p_request_id AND state = 'in_flight';
        DELETE FROM holds WHERE id = p_hold_id;
        RETURN;
    END IF;
    outcome := 'ok';
END $$;
