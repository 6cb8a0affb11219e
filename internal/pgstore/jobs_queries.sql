-- Named queries of the background jobs (internal/jobs): trial-credit expiry,
-- the hold sweeper and the idempotency reaper. Same form as queries.sql.
--
-- Every "now" below is coalesce($1, now()): the caller may sweep as of a
-- given moment (tests, an operator catching up); NULL is the database clock,
-- the one that wrote the leases.

-- name: TrialsDue
-- Organisations past their trial period whose trial is not closed yet, in
-- id order after $3 (keyset paging: an organisation that cannot be charged
-- yet does not stop the scan). balances_trial_open serves it.
SELECT b.org_id
  FROM balances b JOIN orgs o ON o.id = b.org_id
 WHERE b.trial_expired_at IS NULL
   AND o.created_at <= coalesce($1::timestamptz, now()) - $2 * interval '1 microsecond'
   AND b.org_id > $3
 ORDER BY b.org_id
 LIMIT $4;

-- name: LockTrial
-- The balance row, locked for the deduction, and whether the trial is due.
SELECT b.balance_micros, b.held_micros, b.trial_remaining_micros, b.trial_expired_at IS NOT NULL,
       o.created_at <= coalesce($2::timestamptz, now()) - $3 * interval '1 microsecond'
  FROM balances b JOIN orgs o ON o.id = b.org_id
 WHERE b.org_id = $1
   FOR UPDATE OF b;

-- name: DeductTrial
-- Takes $2 of unused trial credit out of the balance; when that is the whole
-- remainder (zero included: spent on calls already) the trial is over. The caller has checked $2 fits beside the
-- holds; held_within_balance refuses it otherwise.
UPDATE balances
   SET balance_micros = balance_micros - $2,
       trial_remaining_micros = trial_remaining_micros - $2,
       trial_expired_at = CASE WHEN trial_remaining_micros = $2 THEN now() ELSE trial_expired_at END,
       updated_at = now()
 WHERE org_id = $1
RETURNING org_id, balance_micros, held_micros, trial_remaining_micros, updated_at;

-- name: ReleaseExpiredHold
-- Releases one live hold whose lease ended more than $2 µs before now.
-- SKIP LOCKED: a hold another sweeper (or its renewing call) has locked is
-- left to it.
WITH picked AS (
    SELECT id FROM holds
     WHERE state = 'held'
       AND expires_at < coalesce($1::timestamptz, now()) - $2 * interval '1 microsecond'
     ORDER BY expires_at
     LIMIT 1
       FOR UPDATE SKIP LOCKED
)
UPDATE holds h SET state = 'released', settled_at = now()
  FROM picked
 WHERE h.id = picked.id AND h.state = 'held'
RETURNING h.id, h.org_id, h.request_id, h.amount_micros;

-- name: FreeSlotsOf
-- The organisation's slot of the request (the rows affected), and the
-- person's for plan usage (0023).
WITH person AS (
    DELETE FROM person_slots WHERE org_id = $1 AND request_id = $2
)
DELETE FROM concurrency_slots WHERE org_id = $1 AND request_id = $2;

-- name: FreeClaimOf
-- Only an in-flight claim: a finished one replays or records the call.
DELETE FROM idempotency_keys WHERE org_id = $1 AND request_id = $2 AND state = 'in_flight';

-- name: RecordOutcome
INSERT INTO call_outcomes (request_id, org_id, endpoint, status, reason)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (request_id) DO NOTHING;

-- name: SweepExpiredSlots
-- Slot leases that ended more than $2 µs ago, of calls holding no live hold.
DELETE FROM concurrency_slots s
 WHERE (s.org_id, s.slot) IN (
    SELECT c.org_id, c.slot FROM concurrency_slots c
     WHERE c.lease_until < coalesce($1::timestamptz, now()) - $2 * interval '1 microsecond'
       AND NOT EXISTS (SELECT 1 FROM holds h WHERE h.request_id = c.request_id AND h.state = 'held')
     LIMIT $3
       FOR UPDATE SKIP LOCKED);

-- name: SweepExpiredPersonSlots
-- The same for the people's slots of plan usage (0023).
DELETE FROM person_slots s
 WHERE (s.org_id, s.person_id, s.slot) IN (
    SELECT c.org_id, c.person_id, c.slot FROM person_slots c
     WHERE c.lease_until < coalesce($1::timestamptz, now()) - $2 * interval '1 microsecond'
       AND NOT EXISTS (SELECT 1 FROM holds h WHERE h.request_id = c.request_id AND h.state = 'held')
     LIMIT $3
       FOR UPDATE SKIP LOCKED);

-- name: SweepExpiredClaims
-- In-flight claims whose lease ended more than $2 µs ago and whose call holds
-- no money: no hold, or a released one. A settled hold means the call was
-- billed: deleting its claim would let a retry bill again, so it stays.
DELETE FROM idempotency_keys k
 WHERE (k.org_id, k.key) IN (
    SELECT c.org_id, c.key FROM idempotency_keys c
     WHERE c.state = 'in_flight'
       AND c.locked_until < coalesce($1::timestamptz, now()) - $2 * interval '1 microsecond'
       AND NOT EXISTS (SELECT 1 FROM holds h WHERE h.request_id = c.request_id AND h.state IN ('held', 'settled'))
     LIMIT $3
       FOR UPDATE SKIP LOCKED);

-- name: ReapIdempotencyKeys
-- Finished claims last touched more than $2 µs ago, a batch at a time;
-- the number deleted. With each claim goes the answer stored for its
-- replay when the organisation kept the call's receipt without its
-- transcript (0024): nothing replays it any more.
WITH gone AS (
    DELETE FROM idempotency_keys k
     WHERE (k.org_id, k.key) IN (
        SELECT c.org_id, c.key FROM idempotency_keys c
         WHERE c.state <> 'in_flight'
           AND c.updated_at < coalesce($1::timestamptz, now()) - $2 * interval '1 microsecond'
         LIMIT $3
           FOR UPDATE SKIP LOCKED)
    RETURNING k.org_id, k.request_id),
cleared AS (
    UPDATE receipts r SET response = NULL
      FROM gone
     WHERE r.request_id = gone.request_id AND r.org_id = gone.org_id
       AND NOT r.transcript_kept AND r.response IS NOT NULL)
SELECT count(*) FROM gone;
