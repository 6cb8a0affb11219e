-- Named queries of the Postgres store. Each starts with "-- name: Name".
-- Every id-bearing read is scoped in SQL.

-- name: InsertOrg
INSERT INTO orgs (id, name, ticker, plan, verified_at) VALUES ($1, $2, $3, $4, CASE WHEN $5::boolean THEN now() END)
RETURNING id, name, ticker, plan, suspended_at, created_at, concurrency, monthly_quota_micros, verified_at, keep_transcripts;

-- name: InsertBalance
INSERT INTO balances (org_id) VALUES ($1);

-- name: GetOrg
SELECT id, name, ticker, plan, suspended_at, created_at, concurrency, monthly_quota_micros, verified_at, keep_transcripts FROM orgs WHERE id = $1;

-- name: OrgByTicker
SELECT id, name, ticker, plan, suspended_at, created_at, concurrency, monthly_quota_micros, verified_at, keep_transcripts FROM orgs WHERE ticker = $1;

-- name: SetOrgSuspended
UPDATE orgs SET suspended_at = CASE WHEN $2::boolean THEN coalesce(suspended_at, now()) ELSE NULL END
WHERE id = $1
RETURNING id, name, ticker, plan, suspended_at, created_at, concurrency, monthly_quota_micros, verified_at, keep_transcripts;

-- name: SetOrgLimits
-- $2/$4: whether to set concurrency ($3; NULL clears) and the quota ($5; NULL clears).
UPDATE orgs SET concurrency = CASE WHEN $2::boolean THEN $3::int ELSE concurrency END,
                monthly_quota_micros = CASE WHEN $4::boolean THEN $5::bigint ELSE monthly_quota_micros END
WHERE id = $1
RETURNING id, name, ticker, plan, suspended_at, created_at, concurrency, monthly_quota_micros, verified_at, keep_transcripts;

-- name: SetOrgVerified
UPDATE orgs SET verified_at = CASE WHEN $2::boolean THEN coalesce(verified_at, now()) ELSE NULL END
WHERE id = $1
RETURNING id, name, ticker, plan, suspended_at, created_at, concurrency, monthly_quota_micros, verified_at, keep_transcripts;

-- name: SetOrgPlan
UPDATE orgs SET plan = $2 WHERE id = $1
RETURNING id, name, ticker, plan, suspended_at, created_at, concurrency, monthly_quota_micros, verified_at, keep_transcripts;

-- name: SetOrgTranscripts
UPDATE orgs SET keep_transcripts = $2 WHERE id = $1
RETURNING id, name, ticker, plan, suspended_at, created_at, concurrency, monthly_quota_micros, verified_at, keep_transcripts;

-- name: InsertPosting
INSERT INTO postings (kind, org_id, memo) VALUES ($1, $2, $3) RETURNING id, created_at;

-- name: InsertLeg
INSERT INTO journal_legs (posting_id, account, org_id, amount_micros) VALUES ($1, $2, $3, $4);

-- name: CreditBalance
-- Adds $2 to the balance and $3 of it to the trial remainder; a credit that
-- is not trial credit is a top-up.
UPDATE balances
   SET balance_micros = balance_micros + $2,
       trial_remaining_micros = trial_remaining_micros + $3,
       topped_up = topped_up OR $2 > $3,
       updated_at = now()
 WHERE org_id = $1
RETURNING org_id, balance_micros, held_micros, trial_remaining_micros, updated_at;

-- name: GetBalance
SELECT org_id, balance_micros, held_micros, trial_remaining_micros, updated_at FROM balances WHERE org_id = $1;

-- name: ListPostings
SELECT p.id, p.kind, coalesce(p.org_id, ''), p.memo, p.created_at, l.account, coalesce(l.org_id, ''), l.amount_micros
  FROM postings p JOIN journal_legs l ON l.posting_id = p.id
 WHERE p.org_id = $1
 ORDER BY p.id, l.id;

-- name: InsertKey
INSERT INTO api_keys (id, org_id, hash, hint, name, test, scopes, modes, rpm, concurrency, max_input_tokens, ceiling_micros, expires_at, person_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
RETURNING id, org_id, name, test, scopes, modes, rpm, concurrency, max_input_tokens, ceiling_micros, hint, expires_at, revoked_at, created_at, person_id,
          coalesce((SELECT m.role FROM memberships m WHERE m.org_id = api_keys.org_id AND m.person_id = api_keys.person_id), '');

-- name: KeyByHash
SELECT k.id, k.org_id, k.name, k.test, k.scopes, k.modes, k.rpm, k.concurrency, k.max_input_tokens, k.ceiling_micros, k.hint, k.expires_at, k.revoked_at, k.created_at,
       k.person_id, coalesce(m.role, ''),
       o.id, o.name, o.ticker, o.plan, o.suspended_at, o.created_at, o.concurrency, o.monthly_quota_micros, o.verified_at, o.keep_transcripts
  FROM api_keys k JOIN orgs o ON o.id = k.org_id
  LEFT JOIN memberships m ON m.org_id = k.org_id AND m.person_id = k.person_id
 WHERE k.hash = $1;

-- name: AuditKeyRevoked
-- The audit row of a revocation, written only when the key was live
-- ($2–$4: the actor's kind, id and address).
INSERT INTO audit_log (org_id, actor_kind, actor_id, address, action, object, detail)
SELECT org_id, $2, $3, $4, 'key.revoked', id, name FROM api_keys WHERE id = $1 AND revoked_at IS NULL;

-- name: RevokeKey
UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1
RETURNING id, org_id, name, test, scopes, modes, rpm, concurrency, max_input_tokens, ceiling_micros, hint, expires_at, revoked_at, created_at, person_id,
          coalesce((SELECT m.role FROM memberships m WHERE m.org_id = api_keys.org_id AND m.person_id = api_keys.person_id), '');

-- name: ListKeys
SELECT k.id, k.org_id, k.name, k.test, k.scopes, k.modes, k.rpm, k.concurrency, k.max_input_tokens, k.ceiling_micros, k.hint,
       k.expires_at, k.revoked_at, k.created_at, k.person_id, coalesce(m.role, ''), k.last_used_at
  FROM api_keys k LEFT JOIN memberships m ON m.org_id = k.org_id AND m.person_id = k.person_id
 WHERE k.org_id = $1 ORDER BY k.created_at, k.id;

-- name: GetHold
SELECT id, org_id, request_id, amount_micros, state, created_at, expires_at, settled_at
  FROM holds WHERE id = $1 AND org_id = $2;

-- name: ReleaseHold
UPDATE holds SET state = 'released', settled_at = now()
 WHERE id = $1 AND org_id = $2 AND state = 'held'
RETURNING amount_micros, request_id;

-- name: ChargeHeld
-- Drops the hold ($2) from held and charges $3 from the balance, spending
-- trial credit first. Every right-hand side reads the row as it was.
UPDATE balances
   SET held_micros = held_micros - $2,
       balance_micros = balance_micros - $3,
       trial_remaining_micros = trial_remaining_micros - least(trial_remaining_micros, $3),
       updated_at = now()
 WHERE org_id = $1
RETURNING org_id, balance_micros, held_micros, trial_remaining_micros, updated_at;

-- name: InsertReceipt
-- A receipt with its calls: $30 is their JSON array (0012); $31 the
-- version of an organisation's mode that ran, null for a configured mode
-- (0014); $32-$36 who called and how the call finished (0019); $37 the
-- call's trace, null when it was not traced (0029). The
-- organisation's content-retention setting is read here, as the receipt is
-- written (0024): when it keeps no transcripts, the best seat and every
-- call lose their content (a call that had text is marked answered) and
-- transcript_kept is false. The response, the answer a retry replays, is
-- written either way; the idempotency reaper clears it.
WITH o AS (SELECT coalesce((SELECT keep_transcripts FROM orgs WHERE id = $2), true) AS keep)
INSERT INTO receipts (request_id, org_id, hold_id, mode_id, mode_key, mode_config_hash, status,
                      billed_micros, token_charge_micros, surcharge_micros, platform_fee_micros, cap_credit_micros,
                      prompt_tokens, completion_tokens, rounds, seat_count, payer, lane,
                      difficulty_score, task_type, hallucination_risk, minority_insight_likely,
                      best_seat, seats_unavailable, staff_unavailable, latency_ms, response, completed_at, created_at,
                      calls, mode_version, key_id, payer_kind, person_id, finish_reason, substituted, transcript_kept, trace_id)
SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
       $19, $20, $21, $22,
       CASE WHEN o.keep THEN $23::jsonb ELSE $23::jsonb - 'content' END,
       $24, $25, $26, $27, $28, coalesce($29::timestamptz, now()),
       CASE WHEN o.keep THEN $30::jsonb
            ELSE (SELECT coalesce(jsonb_agg(CASE WHEN coalesce(c.e->>'content', '') = '' THEN c.e
                                                 ELSE (c.e - 'content') || '{"answered": true}'::jsonb END
                                            ORDER BY c.n), '[]'::jsonb)
                    FROM jsonb_array_elements($30::jsonb) WITH ORDINALITY AS c(e, n)) END,
       $31, $32, $33, $34, $35, $36, o.keep, $37
  FROM o;

-- name: GetReceipt
SELECT request_id, org_id, mode_id, mode_key, mode_config_hash, status,
       billed_micros, token_charge_micros, surcharge_micros, platform_fee_micros, cap_credit_micros,
       prompt_tokens, completion_tokens, rounds, seat_count, payer, coalesce(lane, ''),
       difficulty_score, coalesce(task_type, ''), coalesce(hallucination_risk, ''), minority_insight_likely,
       best_seat, seats_unavailable, staff_unavailable, latency_ms, response, created_at, completed_at, calls,
       mode_version, coalesce(key_id, ''), coalesce(payer_kind, ''), coalesce(person_id, ''),
       coalesce(finish_reason, ''), substituted, NOT transcript_kept, coalesce(trace_id, '')
  FROM receipts WHERE request_id = $1 AND org_id = $2;

-- name: FreeSlot
-- The request's slots: the organisation's, and the person's for plan usage
-- (0023), in one statement.
WITH person AS (
    DELETE FROM person_slots WHERE org_id = $1 AND request_id = $2
)
DELETE FROM concurrency_slots WHERE org_id = $1 AND request_id = $2;

-- name: ReleaseClaim
DELETE FROM idempotency_keys WHERE org_id = $1 AND key = $2 AND request_id = $3 AND state = 'in_flight';

-- name: RenewLeases
-- $1: the live calls' request ids; $2: the lease in µs.
WITH h AS (
    UPDATE holds SET expires_at = clock_timestamp() + $2 * interval '1 microsecond'
     WHERE request_id = ANY($1) AND state = 'held' RETURNING 1
), s AS (
    UPDATE concurrency_slots SET lease_until = clock_timestamp() + $2 * interval '1 microsecond'
     WHERE request_id = ANY($1) RETURNING 1
), ps AS (
    UPDATE person_slots SET lease_until = clock_timestamp() + $2 * interval '1 microsecond'
     WHERE request_id = ANY($1) RETURNING 1
), k AS (
    UPDATE idempotency_keys SET locked_until = clock_timestamp() + $2 * interval '1 microsecond'
     WHERE request_id = ANY($1) AND state = 'in_flight' RETURNING 1
)
SELECT (SELECT count(*) FROM h), (SELECT count(*) FROM s) + (SELECT count(*) FROM ps), (SELECT count(*) FROM k);

-- name: AdmitCall
SELECT outcome, wait_us, claim_state, claim_request_id, claim_request_hash, spent, hold_created_at, hold_expires_at, hold_amount
  FROM admit_call($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18);

-- name: Begin
BEGIN;

-- name: CommitWithoutWaiting
-- The transaction's commit does not wait for the disk (SettleCall follows
-- it with DurableMark).
SELECT set_config('synchronous_commit', 'off', true);

-- name: Commit
COMMIT;

-- name: Rollback
ROLLBACK;

-- name: DurableMark
-- A transaction of its own that writes one small WAL record and commits
-- synchronously: when it returns, the log is on disk up to it, so every
-- commit before it on this server is durable.
SELECT pg_logical_emit_message(true, 'conclave', 'durable');

-- name: SettleCallFn
-- The organisation's balance after the settlement.
SELECT o.org_id, s.balance_micros, s.held_micros, s.trial_remaining_micros, s.updated_at
  FROM settle_call($1, $2, $3, $4, $5, $6) s, (SELECT $2::text AS org_id) o;

-- name: HoldRequest
SELECT request_id FROM holds WHERE id = $1 AND org_id = $2;

-- name: LeaseRate
SELECT granted, wait_us FROM lease_rate($1, $2, $3, $4, $5);
