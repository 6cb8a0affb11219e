-- The mode assistant's quotes and conversations (genie.go; migration 0027).

-- name: CreateQuote
INSERT INTO genie_quotes (id, org_id, payer, kind, request, model, price_micros, questions, minutes, status, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9, 'open', $10, $11);

-- name: Quote
SELECT id, org_id, payer, kind, request, model, price_micros, questions, minutes, status,
       coalesce(batch_id::text, ''), approved_at, created_at, expires_at
  FROM genie_quotes WHERE org_id = $1 AND id = $2;

-- name: ApproveQuote
-- The approval's record on an open quote not expired at $3 (or approved
-- before), else the quote as it stands.
WITH up AS (
    UPDATE genie_quotes SET approved_at = coalesce(approved_at, $3)
     WHERE org_id = $1 AND id = $2 AND status = 'open' AND (approved_at IS NOT NULL OR expires_at > $3)
    RETURNING id, org_id, payer, kind, request, model, price_micros, questions, minutes, status,
              coalesce(batch_id::text, ''), approved_at, created_at, expires_at
)
SELECT * FROM up
UNION ALL
SELECT id, org_id, payer, kind, request, model, price_micros, questions, minutes, status,
       coalesce(batch_id::text, ''), approved_at, created_at, expires_at
  FROM genie_quotes WHERE org_id = $1 AND id = $2 AND NOT EXISTS (SELECT 1 FROM up);

-- name: SettleQuote
-- An open quote's end: launched with its batch, or used. A quote already
-- launched or used is left as it is.
UPDATE genie_quotes SET status = $3, batch_id = nullif($4, '')::uuid
 WHERE org_id = $1 AND id = $2 AND status = 'open';

-- name: QuoteExists
SELECT EXISTS (SELECT 1 FROM genie_quotes WHERE org_id = $1 AND id = $2);

-- name: AppendTurn
INSERT INTO genie_turns (org_id, payer, mode_id, role, content, at) VALUES ($1, $2, $3, $4, $5, $6);

-- name: Turns
SELECT role, content, at FROM (
    SELECT id, role, content, at FROM genie_turns
     WHERE org_id = $1 AND payer = $2 AND mode_id = $3
     ORDER BY id DESC LIMIT $4
) newest ORDER BY id;

-- name: ReapHistory
DELETE FROM genie_turns WHERE at < $1;
