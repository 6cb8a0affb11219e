-- Named queries of benchmark runs (batches.go). Each starts with
-- "-- name: Name". Every read a caller reaches by an id it sent is scoped to
-- its organisation in SQL.

-- name: InsertLaunchClaim
-- A new key is claimed. A key held by a claim no longer in flight that
-- last changed more than $7 microseconds ago is claimed again when $7 is
-- positive (a derived key lapses); otherwise the holder keeps it and no
-- row comes back.
INSERT INTO batch_launches (org_id, key, kind, request_hash, batch_id, state, locked_until)
VALUES ($1, $2, $3, $4, $5, 'in_flight', clock_timestamp() + $6 * interval '1 microsecond')
ON CONFLICT (org_id, key) DO UPDATE
   SET kind = EXCLUDED.kind, request_hash = EXCLUDED.request_hash, batch_id = EXCLUDED.batch_id,
       state = 'in_flight', locked_until = EXCLUDED.locked_until, created_at = now(), updated_at = now()
 WHERE $7::bigint > 0 AND batch_launches.state <> 'in_flight'
   AND batch_launches.updated_at <= clock_timestamp() - $7::bigint * interval '1 microsecond'
RETURNING locked_until;

-- name: StopLapsedLaunchClaim
-- An attempt past its lease without a launch stopped before its launch
-- committed: its key is retired.
UPDATE batch_launches SET state = 'stopped', updated_at = now()
 WHERE org_id = $1 AND key = $2 AND state = 'in_flight' AND locked_until <= clock_timestamp();

-- name: GetLaunchClaim
SELECT kind, request_hash, batch_id::text, state, locked_until FROM batch_launches WHERE org_id = $1 AND key = $2;

-- name: ReleaseLaunchClaim
DELETE FROM batch_launches WHERE org_id = $1 AND key = $2 AND batch_id = $3 AND state = 'in_flight';

-- name: MarkLaunched
UPDATE batch_launches SET state = 'launched', updated_at = now()
 WHERE org_id = $1 AND key = $2 AND batch_id = $3 AND state = 'in_flight';

-- name: LockBalanceForLaunch
SELECT balance_micros - held_micros, NOT topped_up AND trial_expired_at IS NOT NULL AND trial_remaining_micros = 0,
       trial_remaining_micros
  FROM balances WHERE org_id = $1 FOR UPDATE;

-- name: LaunchesToday
SELECT count(*) FROM batches WHERE org_id = $1 AND kind = $2 AND created_at > now() - interval '24 hours';

-- name: SpentSince
-- What the organisation spent since $2 (NULL: ever), as the spend rules of
-- admit_call count it: settled bills and live holds.
SELECT coalesce(sum(CASE h.state WHEN 'settled' THEN h.billed_micros WHEN 'held' THEN h.amount_micros ELSE 0 END), 0)::bigint
  FROM holds h
 WHERE h.org_id = $1
   AND ($2::boolean OR h.created_at >= date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC');

-- name: InsertLaunchHold
-- A launch's charge as a hold settled at once: the spend rules count it.
INSERT INTO holds (id, org_id, request_id, amount_micros, state, billed_micros, expires_at, settled_at)
VALUES ($1, $2, $3, $4, 'settled', $4, now(), now());

-- name: ChargeForLaunch
-- Trial credit is spent first, as a call's settlement spends it.
UPDATE balances
   SET balance_micros = balance_micros - $2,
       trial_remaining_micros = trial_remaining_micros - least(trial_remaining_micros, $2),
       updated_at = now()
 WHERE org_id = $1;

-- name: NextCertifyAttempt
SELECT coalesce(max(attempt), 0) + 1 FROM batches WHERE kind = 'certify' AND mode_id = $1 AND mode_version = $2;

-- name: InsertBatch
INSERT INTO batches (id, org_id, kind, model, mode_id, mode_key, mode_version, mode_config_hash, plan, protocol,
                     judges, judge_repeats, draw_seed, bank_version, quote, billed_micros, attempt, total, trial_micros, person_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20);

-- name: InsertBatchQuestions
INSERT INTO batch_questions (batch_id, index, bucket, tier, question_id, price_micros)
SELECT $1, u.i, u.b, u.t, u.q, u.p FROM unnest($2::int[], $3::text[], $4::text[], $5::text[], $6::bigint[]) AS u (i, b, t, q, p);

-- name: GetBatch
-- $2 scopes the read to an organisation; '' reads any (the jobs do).
SELECT id::text, org_id, kind, model, mode_id, mode_key, mode_version, mode_config_hash, plan, draw_seed, bank_version,
       quote, billed_micros, coalesce(attempt, 0), status, total, answered, judged, failed, result, certification,
       coalesce(failure, ''), created_at, started_at, finished_at, cancelled, refunded_micros, person_id
  FROM batches WHERE id = $1 AND ($2 = '' OR org_id = $2);

-- name: BatchBuckets
SELECT bucket, count(*), count(answered_at), count(*) FILTER (WHERE state = 'judged'), count(*) FILTER (WHERE state = 'failed'),
       count(*) FILTER (WHERE state = 'cancelled')
  FROM batch_questions WHERE batch_id = $1 GROUP BY bucket;

-- name: StartBatch
UPDATE batches SET status = 'running', started_at = now() WHERE id = $1 AND status = 'queued';

-- name: GetQuestions
-- $2 < 0 reads every question of the batch.
SELECT index, bucket, tier, question_id, mode_answer, baseline_answer, state, coalesce(failure, ''), price_micros
  FROM batch_questions WHERE batch_id = $1 AND ($2 < 0 OR index = $2) ORDER BY index;

-- name: GetJudgments
SELECT index, judge, repeat, answer_order, verdict, detail, cost_micros, latency_us
  FROM batch_judgments WHERE batch_id = $1 AND ($2 < 0 OR index = $2) ORDER BY index, judge, repeat;

-- name: RecordModeAnswer
-- A question no longer pending (cancelled with its batch) records nothing.
UPDATE batch_questions
   SET mode_answer = $3, answered_at = CASE WHEN baseline_answer IS NOT NULL THEN now() END
 WHERE batch_id = $1 AND index = $2 AND mode_answer IS NULL AND state = 'pending'
RETURNING answered_at IS NOT NULL;

-- name: RecordBaselineAnswer
UPDATE batch_questions
   SET baseline_answer = $3, answered_at = CASE WHEN mode_answer IS NOT NULL THEN now() END
 WHERE batch_id = $1 AND index = $2 AND baseline_answer IS NULL AND state = 'pending'
RETURNING answered_at IS NOT NULL;

-- name: CountAnswered
UPDATE batches SET answered = answered + 1 WHERE id = $1;

-- name: InsertJudgment
-- Only a pending question is judged: one cancelled with its batch records
-- nothing more. The row lock keeps a cancel from passing in between.
INSERT INTO batch_judgments (batch_id, index, judge, repeat, answer_order, verdict, detail, cost_micros, latency_us)
SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9
 WHERE EXISTS (SELECT 1 FROM batch_questions WHERE batch_id = $1 AND index = $2 AND state = 'pending' FOR SHARE)
ON CONFLICT (batch_id, index, judge, repeat) DO NOTHING;

-- name: LockBatch
-- The batch row, locked for a move of its questions or its status: a
-- question's finish, a cancel and the batch's finish take it first, so they
-- queue behind each other instead of deadlocking on its questions' rows.
-- $2 scopes it to an organisation; '' locks any.
SELECT status, judged + failed + cancelled >= total
  FROM batches WHERE id = $1 AND ($2 = '' OR org_id = $2) FOR NO KEY UPDATE;

-- name: FinishQuestion
-- Conditional on the question's being pending: it is finished (and, failed,
-- refunded) once.
UPDATE batch_questions SET state = $3, failure = nullif($4, ''), finished_at = now()
 WHERE batch_id = $1 AND index = $2 AND state = 'pending'
RETURNING price_micros;

-- name: CountFinished
UPDATE batches SET judged = judged + $2, failed = failed + $3 WHERE id = $1
RETURNING total, answered, judged, failed, cancelled;

-- name: BatchProgress
SELECT total, answered, judged, failed, cancelled FROM batches WHERE id = $1;

-- name: FinishBatch
-- $6 lists the statuses the batch may move to $2 from (runs.MovesTo). It
-- returns what of the charge is not refunded yet.
UPDATE batches SET status = $2, result = $3, certification = $4, failure = nullif($5, ''), finished_at = now()
 WHERE id = $1 AND status = ANY ($6::text[])
RETURNING billed_micros - refunded_micros;

-- name: CancelBatch
-- $2 lists the statuses a batch may be cancelled from (runs.MovesTo).
UPDATE batches SET status = 'cancelled', finished_at = now() WHERE id = $1 AND status = ANY ($2::text[]);

-- name: CancelQuestions
-- Every pending question of the batch that nothing was answered to is
-- cancelled: their indexes, and their prices added up. A question with the
-- mode's answer or the baseline's is finished and charged: it stays
-- pending, and its job runs it to its end. A question answered as it is
-- cancelled is one or the other, never both: this update and the answer's
-- each recheck the row the other wrote.
WITH c AS (
    UPDATE batch_questions SET state = 'cancelled', finished_at = now()
     WHERE batch_id = $1 AND state = 'pending' AND mode_answer IS NULL AND baseline_answer IS NULL
    RETURNING index, price_micros
)
SELECT coalesce(array_agg(index ORDER BY index), '{}')::int[], coalesce(sum(price_micros), 0)::bigint FROM c;

-- name: CountCancelled
UPDATE batches SET cancelled = cancelled + $2 WHERE id = $1;

-- name: RefundBatch
-- Gives back $2 of batch $1's charge and answers the batch's organisation
-- and kind, and how much of the refund is trial credit: trial credit first, up to what trial credit paid of the charge
-- and was not given back yet. The caller holds the batch row; the CHECK
-- refund_within_charge refuses a refund past the charge.
WITH old AS (
    SELECT id, org_id, kind, least($2, trial_micros - trial_refunded_micros) AS trial FROM batches WHERE id = $1
)
UPDATE batches b
   SET refunded_micros = b.refunded_micros + $2, trial_refunded_micros = b.trial_refunded_micros + old.trial
  FROM old
 WHERE b.id = old.id
RETURNING old.org_id, old.kind, old.trial;

-- name: RefundToBalance
-- A refund of $2, $3 of it trial credit given back. Trial credit given back
-- is trial credit again: a trial that has expired meanwhile is reopened, and
-- the next expiry pass deducts it as it deducted the rest.
UPDATE balances
   SET balance_micros = balance_micros + $2,
       trial_remaining_micros = trial_remaining_micros + $3,
       trial_expired_at = CASE WHEN $3 > 0 THEN NULL ELSE trial_expired_at END,
       updated_at = now()
 WHERE org_id = $1;

-- name: RefundLaunchHold
-- The spend rules count a launch as its settled hold's bill: a refund takes
-- its amount off it, so the monthly quota and the activation allowance
-- count what the organisation paid in the end.
UPDATE holds SET billed_micros = billed_micros - $2 WHERE request_id = $1 AND state = 'settled';

-- name: AuditBatchCancelled
-- The audit row of a cancel ($2–$4: the actor's kind, id and address).
INSERT INTO audit_log (org_id, actor_kind, actor_id, address, action, object, detail)
SELECT org_id, $2, $3, $4, CASE kind WHEN 'test' THEN 'test.cancelled' ELSE 'certify.cancelled' END, id::text, mode_id
  FROM batches WHERE id = $1;
