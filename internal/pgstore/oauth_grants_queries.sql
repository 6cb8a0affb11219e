-- Named queries of the embedded authorization server (oauth_grants.go):
-- its signing key, authorization requests, grants and refresh tokens. An
-- audit row is written by the change's own statement (a data-modifying
-- WITH); the actor is always its kind, id and address, in that order.

-- name: InsertSigningKey
-- A replica's candidate key, kept only when no key is active yet: two
-- replicas starting together both insert, one wins, both read it back.
INSERT INTO oauth_signing_keys (id, algorithm, private_key) VALUES ($1, $2, $3)
ON CONFLICT (active) WHERE active DO NOTHING;

-- name: SigningKeys
SELECT id, algorithm, private_key, created_at FROM oauth_signing_keys
 ORDER BY active DESC, created_at DESC LIMIT 10;

-- name: InsertAuthRequest
INSERT INTO oauth_auth_requests (id, client_id, redirect_uri, state, nonce, scopes, code_challenge, resource, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
RETURNING created_at;

-- name: AuthRequest
SELECT id, client_id, redirect_uri, state, nonce, scopes, code_challenge, resource, done, person_id, org_id, grant_id,
       code_hash IS NOT NULL, created_at, expires_at
  FROM oauth_auth_requests WHERE id = $1 AND expires_at > now();

-- name: SetAuthCode
-- A consented request yields one code, once.
UPDATE oauth_auth_requests SET code_hash = $2
 WHERE id = $1 AND done AND code_hash IS NULL AND expires_at > now();

-- name: TakeAuthCode
-- The code's exchange takes the request: a second exchange finds nothing.
-- A grant revoked in between yields nothing too.
DELETE FROM oauth_auth_requests a USING oauth_grants g
 WHERE a.code_hash = $1 AND a.done AND a.expires_at > now() AND g.id = a.grant_id AND g.revoked_at IS NULL
RETURNING a.id, a.client_id, a.redirect_uri, a.state, a.nonce, a.scopes, a.code_challenge, a.resource, a.done,
          a.person_id, a.org_id, a.grant_id, true, a.created_at, a.expires_at;

-- name: DeleteAuthRequest
DELETE FROM oauth_auth_requests WHERE id = $1;

-- name: DeleteExpiredAuthRequests
DELETE FROM oauth_auth_requests WHERE expires_at <= $1;

-- name: ApproveAuthRequest
-- The person's consent, in one statement: the request must still wait
-- (not done, not expired) and the person be a member of the organisation;
-- then the grant is written, the request marked done with it, and the
-- audit row ($7–$9: the actor, $10: the action, $11: the app's name as
-- shown) added.
-- The row lock makes a second approval of the same request find it done.
WITH ok AS (
    SELECT a.id, a.client_id, a.scopes, a.resource FROM oauth_auth_requests a
     WHERE a.id = $1 AND NOT a.done AND a.expires_at > now()
       AND EXISTS (SELECT 1 FROM memberships m WHERE m.org_id = $4 AND m.person_id = $3)
       FOR UPDATE
), g AS (
    INSERT INTO oauth_grants (id, client_id, client_name, verified, person_id, org_id, scopes, resource)
    SELECT $2, ok.client_id, $5, $6, $3, $4, ok.scopes, ok.resource FROM ok
    RETURNING id, client_id, client_name, verified, person_id, org_id, scopes, resource, created_at, last_used_at, revoked_at
), marked AS (
    UPDATE oauth_auth_requests a SET done = true, person_id = $3, org_id = $4, grant_id = $2
      FROM ok WHERE a.id = ok.id
), audit AS (
    INSERT INTO audit_log (org_id, actor_kind, actor_id, address, action, object, detail)
    SELECT g.org_id, $7, $8, $9, $10, g.id,
           left(format('%s (%s, %s): %s', $11::text, CASE WHEN g.verified THEN 'verified' ELSE 'self-declared' END,
                       g.client_id, array_to_string(g.scopes, ' ')), 500)
      FROM g
)
SELECT id, client_id, client_name, verified, person_id, org_id, scopes, resource, created_at, last_used_at, revoked_at FROM g;

-- name: Grant
SELECT id, client_id, client_name, verified, person_id, org_id, scopes, resource, created_at, last_used_at, revoked_at
  FROM oauth_grants WHERE id = $1;

-- name: ListGrants
-- An organisation's grants, newest first; one person's when $2 is not ''.
SELECT id, client_id, client_name, verified, person_id, org_id, scopes, resource, created_at, last_used_at, revoked_at
  FROM oauth_grants WHERE org_id = $1 AND ($2 = '' OR person_id = $2)
 ORDER BY created_at DESC, id DESC;

-- name: RevokeGrant
-- Revokes a standing grant of the organisation, deletes its refresh
-- tokens and writes the audit row ($3–$5: the actor, $6: the action; the
-- detail is the app's name and $7). A grant already revoked is left as it is (no row written):
-- the caller reads it back.
WITH g AS (
    UPDATE oauth_grants SET revoked_at = now()
     WHERE id = $2 AND org_id = $1 AND revoked_at IS NULL
    RETURNING id, client_id, client_name, verified, person_id, org_id, scopes, resource, created_at, last_used_at, revoked_at
), gone AS (
    DELETE FROM oauth_refresh_tokens t USING g WHERE t.grant_id = g.id
), audit AS (
    INSERT INTO audit_log (org_id, actor_kind, actor_id, address, action, object, detail)
    SELECT g.org_id, $3, $4, $5, $6, g.id, g.client_name || $7 FROM g
)
SELECT id, client_id, client_name, verified, person_id, org_id, scopes, resource, created_at, last_used_at, revoked_at FROM g;

-- name: TouchGrant
-- When a token was last issued under the grant; written at most once a
-- minute, so a busy app does not rewrite its row on every refresh.
UPDATE oauth_grants SET last_used_at = now()
 WHERE id = $1 AND last_used_at < now() - interval '1 minute';

-- name: InsertRefreshToken
-- A refresh token issued at a code's exchange, under a standing grant.
INSERT INTO oauth_refresh_tokens (hash, grant_id, expires_at)
SELECT $1, g.id, $3 FROM oauth_grants g WHERE g.id = $2 AND g.revoked_at IS NULL;

-- name: RefreshToken
SELECT t.used_at, t.expires_at,
       g.id, g.client_id, g.client_name, g.verified, g.person_id, g.org_id, g.scopes, g.resource, g.created_at,
       g.last_used_at, g.revoked_at
  FROM oauth_refresh_tokens t JOIN oauth_grants g ON g.id = t.grant_id
 WHERE t.hash = $1;

-- name: RotateRefreshToken
-- Rotation in one statement: the old token ($1) is marked used only if it
-- was live, unexpired and its grant standing; only then is its successor
-- ($2, expiring at $3) written and the grant's last use updated. No row:
-- the old token was already used (or expired, or its grant revoked).
WITH used AS (
    UPDATE oauth_refresh_tokens t SET used_at = now()
      FROM oauth_grants g
     WHERE t.hash = $1 AND t.used_at IS NULL AND t.expires_at > now() AND g.id = t.grant_id AND g.revoked_at IS NULL
    RETURNING t.grant_id
), fresh AS (
    INSERT INTO oauth_refresh_tokens (hash, grant_id, expires_at) SELECT $2, grant_id, $3 FROM used
    RETURNING grant_id
)
UPDATE oauth_grants g SET last_used_at = now() FROM fresh WHERE g.id = fresh.grant_id
RETURNING g.id;

-- name: DeleteExpiredRefreshTokens
DELETE FROM oauth_refresh_tokens WHERE expires_at <= $1;

-- name: TouchClient
-- When a registered client was last used; written at most once an hour.
UPDATE oauth_clients SET last_used_at = now()
 WHERE id = $1 AND last_used_at < now() - interval '1 hour';
