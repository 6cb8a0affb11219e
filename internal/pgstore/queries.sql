-- Named queries of the Postgres store. Each starts with "-- name: Name".
-- Every id-bearing read is scoped in SQL.

-- name: InsertOrg
INSERT INTO orgs (id, name, ticker, plan) VALUES ($1, $2, $3, $4)
RETURNING id, name, ticker, plan, suspended_at, created_at;

-- name: InsertBalance
INSERT INTO balances (org_id) VALUES ($1);

-- name: GetOrg
SELECT id, name, ticker, plan, suspended_at, created_at FROM orgs WHERE id = $1;

-- name: OrgByTicker
SELECT id, name, ticker, plan, suspended_at, created_at FROM orgs WHERE ticker = $1;

-- name: SetOrgSuspended
UPDATE orgs SET suspended_at = CASE WHEN $2::boolean THEN coalesce(suspended_at, now()) ELSE NULL END
WHERE id = $1
RETURNING id, name, ticker, plan, suspended_at, created_at;

-- name: SetOrgPlan
UPDATE orgs SET plan = $2 WHERE id = $1
RETURNING id, name, ticker, plan, suspended_at, created_at;

-- name: InsertPosting
INSERT INTO postings (kind, org_id, memo) VALUES ($1, $2, $3) RETURNING id, created_at;

-- name: InsertLeg
INSERT INTO journal_legs (posting_id, account, org_id, amount_micros) VALUES ($1, $2, $3, $4);

-- name: CreditBalance
-- Adds $2 to the balance and $3 of it to the trial remainder.
UPDATE balances
   SET balance_micros = balance_micros + $2,
       trial_remaining_micros = trial_remaining_micros + $3,
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
INSERT INTO api_keys (id, org_id, hash, hint, name, test, scopes, modes, rpm, concurrency, max_input_tokens, ceiling_micros, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
RETURNING id, org_id, name, test, scopes, modes, rpm, concurrency, max_input_tokens, ceiling_micros, hint, expires_at, revoked_at, created_at;

-- name: KeyByHash
SELECT k.id, k.org_id, k.name, k.test, k.scopes, k.modes, k.rpm, k.concurrency, k.max_input_tokens, k.ceiling_micros, k.hint, k.expires_at, k.revoked_at, k.created_at,
       o.id, o.name, o.ticker, o.plan, o.suspended_at, o.created_at
  FROM api_keys k JOIN orgs o ON o.id = k.org_id
 WHERE k.hash = $1;

-- name: RevokeKey
UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1
RETURNING id, org_id, name, test, scopes, modes, rpm, concurrency, max_input_tokens, ceiling_micros, hint, expires_at, revoked_at, created_at;

-- name: ListKeys
SELECT id, org_id, name, test, scopes, modes, rpm, concurrency, max_input_tokens, ceiling_micros, hint, expires_at, revoked_at, created_at
  FROM api_keys WHERE org_id = $1 ORDER BY created_at, id;
