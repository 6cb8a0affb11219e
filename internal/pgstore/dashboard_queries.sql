-- The dashboard's reads and the spend job (dashboard.go). The lists are
-- built in Go from their filters (each filter a placeholder), so that the
-- planner sees which index a filter can use.

-- name: MoneyState
-- The balance row, the trial and the activation allowance's use: what an
-- unverified organisation has spent counts every hold, as admission does.
SELECT b.org_id, b.balance_micros, b.held_micros, b.trial_remaining_micros, b.updated_at,
       b.topped_up, b.trial_expired_at, o.created_at, o.verified_at IS NOT NULL,
       CASE WHEN o.verified_at IS NULL THEN
           (SELECT coalesce(sum(CASE h.state WHEN 'settled' THEN h.billed_micros WHEN 'held' THEN h.amount_micros ELSE 0 END), 0)::bigint
              FROM holds h WHERE h.org_id = o.id)
       ELSE 0 END
  FROM balances b JOIN orgs o ON o.id = b.org_id
 WHERE b.org_id = $1;

-- name: DailySpend
SELECT day, key_id, mode, person_id, kind, charges, billed_micros
  FROM daily_spend
 WHERE org_id = $1 AND day >= $2::date AND day < $3::date AND ($4 = '' OR person_id = $4)
 ORDER BY day, kind, mode, key_id, person_id;

-- name: SpendSeries
-- $5 'mode' or 'key'; $6 how many labels keep a series of their own.
WITH s AS (
    SELECT day,
           CASE WHEN $5 = 'mode' THEN mode WHEN kind = 'call' THEN key_id ELSE kind END AS label,
           charges, billed_micros
      FROM daily_spend
     WHERE org_id = $1 AND day >= $2::date AND day < $3::date AND ($4 = '' OR person_id = $4)),
t AS (SELECT label, sum(charges)::bigint AS charges, sum(billed_micros)::bigint AS billed FROM s GROUP BY label),
top AS (SELECT label FROM t ORDER BY billed DESC, label LIMIT $6)
SELECT false AS per_day, NULL::date, label, false, charges, billed FROM t
UNION ALL
SELECT true, day, CASE WHEN label IN (SELECT label FROM top) THEN label ELSE '' END, label NOT IN (SELECT label FROM top),
       sum(charges)::bigint, sum(billed_micros)::bigint
  FROM s GROUP BY day, 3, 4
 ORDER BY 1, 2, 6 DESC, 3;

-- name: SetKeyLimits
-- A negative limit leaves it as it is; 0 is the deployment's default.
UPDATE api_keys
   SET rpm = CASE WHEN $3::int < 0 THEN rpm ELSE nullif($3::int, 0) END,
       concurrency = CASE WHEN $4::int < 0 THEN concurrency ELSE nullif($4::int, 0) END,
       max_input_tokens = CASE WHEN $5::int < 0 THEN max_input_tokens ELSE nullif($5::int, 0) END
 WHERE id = $1 AND org_id = $2
RETURNING id, org_id, name, test, scopes, modes, rpm, concurrency, max_input_tokens, ceiling_micros, hint, expires_at, revoked_at, created_at, person_id,
          coalesce((SELECT m.role FROM memberships m WHERE m.org_id = api_keys.org_id AND m.person_id = api_keys.person_id), '');

-- name: AuditKeyChanged
INSERT INTO audit_log (org_id, actor_kind, actor_id, address, action, object, detail)
SELECT org_id, $2, $3, $4, $7, id, $5 FROM api_keys WHERE id = $1 AND org_id = $6;

-- name: TouchKeys
-- Never moves a key's last use back: replicas flush in any order.
UPDATE api_keys k
   SET last_used_at = u.at
  FROM unnest($1::text[], $2::timestamptz[]) AS u (id, at)
 WHERE k.id = u.id AND (k.last_used_at IS NULL OR k.last_used_at < u.at);

-- name: SpendCursor
SELECT posting_id FROM journal_cursors WHERE name = 'daily_spend' FOR UPDATE;

-- name: SpendPostings
-- The postings past the cursor, oldest first, with what the spend sums
-- need: the amount the organisation's balance moved, and who and which
-- mode the charge was for (a call's receipt, a run's batch: both written
-- in the posting's own transaction). old says the posting began longer
-- ago than the grace ($3): a gap in the ids before it is a transaction
-- that rolled back, not one still running.
SELECT p.id, p.kind, coalesce(p.org_id, ''), (p.created_at AT TIME ZONE 'UTC')::date, coalesce(l.amount_micros, 0),
       coalesce(r.key_id, ''), coalesce(r.mode_id, b.model, ''), coalesce(r.person_id, b.person_id, ''),
       p.created_at < now() - $3 * interval '1 microsecond'
  FROM postings p
  LEFT JOIN journal_legs l ON l.posting_id = p.id AND l.account = 'org_balance'
  LEFT JOIN receipts r ON p.kind = 'call_charge' AND r.request_id = substr(p.memo, 6)
  LEFT JOIN batches b ON p.kind IN ('test_charge', 'test_refund', 'certify_charge', 'certify_refund')
                     AND b.id::text = substring(p.memo FROM '[^ ]+$')
 WHERE p.id > $1
 ORDER BY p.id
 LIMIT $2;

-- name: AddSpend
INSERT INTO daily_spend AS d (org_id, day, key_id, mode, person_id, kind, charges, billed_micros)
SELECT * FROM unnest($1::text[], $2::date[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::bigint[])
ON CONFLICT (org_id, day, key_id, mode, person_id, kind) DO UPDATE
   SET charges = d.charges + EXCLUDED.charges, billed_micros = d.billed_micros + EXCLUDED.billed_micros;

-- name: MoveSpendCursor
UPDATE journal_cursors SET posting_id = $1, updated_at = now() WHERE name = 'daily_spend';
