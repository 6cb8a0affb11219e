-- Quota leasing for a key's rate (core/access, docs/limits.md): a replica
-- takes a share of a key's budget in one trip and spends it locally,
-- returning what it did not use in its next trip. The budget is the same
-- GCRA row admit_call spends (rate_limits.tat, the theoretical arrival time
-- of the key's next request), so a lease is carved out of the key's own
-- budget: granting k cells moves tat exactly as k admissions would, and
-- leases, billed calls and other replicas' requests can never together pass
-- what one replica admitting each request alone would allow.
--
-- lease_rate returns p_back_us of unused cells (moving tat back, which only
-- frees budget the returning replica had taken), then grants as many of
-- p_want cells as fit now: cell j (from 0) fits while tat - now + j·interval
-- is within the tolerance, as each of k admissions in a row would be
-- checked. granted is 0 with wait_us until the next cell fits when none does.

CREATE FUNCTION lease_rate(p_key_id text, p_interval_us bigint, p_tolerance_us bigint, p_want int, p_back_us bigint,
    OUT granted int, OUT wait_us bigint) LANGUAGE plpgsql AS $$
DECLARE
    v_now   timestamptz := clock_timestamp();
    v_tat   timestamptz;
    v_ahead bigint;
BEGIN
    -- Like admit_call's rate, a reservation: a lost commit only frees budget.
    PERFORM set_config('synchronous_commit', 'off', true);
    INSERT INTO rate_limits AS r (key_id, tat) VALUES (p_key_id, v_now)
    ON CONFLICT (key_id) DO UPDATE SET tat = r.tat - greatest(p_back_us, 0) * interval '1 microsecond'
    RETURNING r.tat INTO v_tat;
    v_ahead := greatest(0, (extract(epoch FROM (v_tat - v_now)) * 1e6)::bigint);
    IF v_ahead > p_tolerance_us THEN
        granted := 0;
        wait_us := v_ahead - p_tolerance_us;
        RETURN;
    END IF;
    granted := least(p_want, (p_tolerance_us - v_ahead) / p_interval_us + 1)::int;
    wait_us := 0;
    UPDATE rate_limits SET tat = greatest(v_tat, v_now) + granted * p_interval_us * interval '1 microsecond'
     WHERE key_id = p_key_id;
END $$;
