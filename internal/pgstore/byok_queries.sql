-- Named queries of bring-your-own-key (byok.go). Every read is scoped by
-- organisation in SQL.

-- name: UpsertBYOK
INSERT INTO byok_credentials (org_id, provider, sealed, key_id, role_arn, external_id, hint)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (org_id, provider) DO UPDATE
   SET sealed = EXCLUDED.sealed, key_id = EXCLUDED.key_id, role_arn = EXCLUDED.role_arn,
       external_id = EXCLUDED.external_id, hint = EXCLUDED.hint, updated_at = now()
RETURNING org_id, provider, key_id, role_arn, external_id, hint, created_at, updated_at;

-- name: ListBYOK
-- No sealed key: a listing never carries one. $2 is the providers in
-- listing order (core.BYOKProviders).
SELECT org_id, provider, key_id, role_arn, external_id, hint, created_at, updated_at
  FROM byok_credentials WHERE org_id = $1
 ORDER BY array_position($2::text[], provider);

-- name: LookupBYOK
SELECT org_id, provider, key_id, role_arn, external_id, hint, created_at, updated_at, sealed
  FROM byok_credentials WHERE org_id = $1 AND provider = $2;

-- name: RemoveBYOK
DELETE FROM byok_credentials WHERE org_id = $1 AND provider = $2;

-- name: AnyBYOK
SELECT EXISTS (SELECT 1 FROM byok_credentials);

-- name: AuditBYOKRemoved
-- The audit row of a removal, written only when there is a credential to
-- remove ($3–$5: the actor's kind, id and address).
INSERT INTO audit_log (org_id, actor_kind, actor_id, address, action, object, detail)
SELECT org_id, $3, $4, $5, 'byok.removed', provider, '' FROM byok_credentials WHERE org_id = $1 AND provider = $2;
