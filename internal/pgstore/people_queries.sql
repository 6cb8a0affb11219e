-- Named queries of people (core.People): people, memberships, passkeys,
-- invitations, sessions, WebAuthn ceremonies, attempts and the audit trail.
-- An audit row is written by the change's own statement (a data-modifying
-- WITH) or queued beside it in one batch; $actor is always the actor's
-- kind, id and address, in that order.

-- name: InsertPerson
INSERT INTO people (id, email, name) VALUES ($1, $2, $3)
RETURNING id, email, name, created_at;

-- name: Join
-- The person joins the organisation, and the row "person.joined" ($4–$6:
-- the actor, $7: the action) is written only when they were not in it.
WITH m AS (
    INSERT INTO memberships (org_id, person_id, role) VALUES ($1, $2, $3)
    ON CONFLICT (org_id, person_id) DO NOTHING
    RETURNING org_id, person_id, role)
INSERT INTO audit_log (org_id, actor_kind, actor_id, address, action, object, detail)
SELECT m.org_id, $4, $5, $6, $7, m.person_id, p.email || ' as ' || m.role
  FROM m JOIN people p ON p.id = m.person_id;

-- name: GetPerson
SELECT id, email, name, created_at FROM people WHERE id = $1;

-- name: PersonByEmail
SELECT id, email, name, created_at FROM people WHERE email = $1;

-- name: SetPersonName
UPDATE people SET name = $2 WHERE id = $1 RETURNING id, email, name, created_at;

-- name: Memberships
SELECT m.org_id, o.name, o.ticker, m.person_id, m.role, m.created_at
  FROM memberships m JOIN orgs o ON o.id = m.org_id
 WHERE m.person_id = $1 ORDER BY o.name, m.org_id;

-- name: Membership
SELECT m.org_id, o.name, o.ticker, m.person_id, m.role, m.created_at
  FROM memberships m JOIN orgs o ON o.id = m.org_id
 WHERE m.person_id = $1 AND m.org_id = $2;

-- name: Members
SELECT p.id, p.email, p.name, p.created_at, m.role, m.created_at
  FROM memberships m JOIN people p ON p.id = m.person_id
 WHERE m.org_id = $1 ORDER BY p.email;

-- name: LockRoles
-- Every change of a role in one organisation takes its row first, so two
-- owners demoting each other run one after the other. NO KEY UPDATE: the
-- row's key-share locks (every insert naming the organisation) still pass.
SELECT 1 FROM orgs WHERE id = $1 FOR NO KEY UPDATE;

-- name: ReadRoles
-- Sent after LockRoles in the same batch, as its own statement: its
-- snapshot is taken once the lock is held, so it counts the owners a
-- change committed while this one waited.
SELECT count(*) FILTER (WHERE role = 'owner'), coalesce(max(role) FILTER (WHERE person_id = $2), '')
  FROM memberships WHERE org_id = $1;

-- name: SetRole
UPDATE memberships m SET role = $3 FROM orgs o
 WHERE m.org_id = $1 AND m.person_id = $2 AND o.id = m.org_id
RETURNING m.org_id, o.name, o.ticker, m.person_id, m.role, m.created_at;

-- name: DeleteMembership
DELETE FROM memberships WHERE org_id = $1 AND person_id = $2;

-- name: DeleteOrgSessions
-- A removed person's sessions in the organisation end; the ones they have
-- in another of their organisations go on.
DELETE FROM sessions WHERE person_id = $1 AND org_id = $2;

-- name: PersonAudit
-- An audit row about the person $1's own sign-in methods, in each
-- organisation they belong to ($2–$4: the actor).
INSERT INTO audit_log (org_id, actor_kind, actor_id, address, action, object, detail)
SELECT org_id, $2, $3, $4, $5, $6, $7 FROM memberships WHERE person_id = $1;

-- name: SetPassword
UPDATE people SET password_hash = $2 WHERE id = $1;

-- name: DeleteOtherSessions
DELETE FROM sessions WHERE person_id = $1 AND hash <> coalesce($2, ''::bytea);

-- name: PasswordHash
SELECT password_hash FROM people WHERE id = $1 AND password_hash IS NOT NULL;

-- name: InsertPasskey
INSERT INTO passkeys (id, person_id, credential_id, name, credential) VALUES ($1, $2, $3, $4, $5)
RETURNING id, person_id, credential_id, name, credential, created_at, last_used_at;

-- name: Passkeys
SELECT id, person_id, credential_id, name, credential, created_at, last_used_at
  FROM passkeys WHERE person_id = $1 ORDER BY created_at, id;

-- name: PasskeyByCredentialID
SELECT id, person_id, credential_id, name, credential, created_at, last_used_at
  FROM passkeys WHERE credential_id = $1;

-- name: UsePasskey
UPDATE passkeys SET credential = $2, last_used_at = now() WHERE id = $1;

-- name: DeletePasskey
-- The passkey goes, with its row "passkey.removed" ($3–$5: the actor, $6:
-- the action) in each of the person's organisations; it returns how many
-- passkeys went (0 or 1).
WITH d AS (DELETE FROM passkeys WHERE person_id = $1 AND id = $2 RETURNING id, name),
     a AS (INSERT INTO audit_log (org_id, actor_kind, actor_id, address, action, object, detail)
           SELECT m.org_id, $3, $4, $5, $6, d.id, d.name FROM d CROSS JOIN memberships m WHERE m.person_id = $1)
SELECT count(*) FROM d;

-- name: InsertInvitation
INSERT INTO invitations (hash, id, kind, org_id, email, person_id, role, created_by_kind, created_by_id, expires_at)
VALUES ($1, $2, $3, nullif($4, ''), $5, $6, nullif($7, ''), $8, $9, $10)
RETURNING id, kind, coalesce(org_id, ''), email, person_id, coalesce(role, ''), created_by_kind, created_by_id,
          created_at, expires_at, used_at;

-- name: Invitation
SELECT id, kind, coalesce(org_id, ''), email, person_id, coalesce(role, ''), created_by_kind, created_by_id,
       created_at, expires_at, used_at
  FROM invitations WHERE hash = $1;

-- name: UseInvitation
-- Single use: only a link neither used nor expired is taken. A second
-- accept waits on the first's row lock and then finds it used.
UPDATE invitations SET used_at = now() WHERE hash = $1 AND used_at IS NULL AND expires_at > now()
RETURNING id, kind, coalesce(org_id, ''), email, person_id, coalesce(role, ''), created_by_kind, created_by_id,
          created_at, expires_at, used_at;

-- name: InsertSession
-- The person's sessions past their absolute end are cleared as a new one
-- begins, so none is kept longer than its lifetime after the next sign-in.
WITH gone AS (DELETE FROM sessions WHERE person_id = $3 AND expires_at < now())
INSERT INTO sessions (hash, id, person_id, org_id, address, expires_at) VALUES ($1, $2, $3, $4, $5, $6)
RETURNING id, person_id, org_id, address, created_at, last_seen_at, expires_at;

-- name: TouchSession
-- A live session ($2: the idle timeout). Its use is recorded only when
-- the last record is over a minute old, so a busy page writes at most
-- once a minute.
WITH s AS (
    SELECT id, person_id, org_id, address, created_at, last_seen_at, expires_at FROM sessions
     WHERE hash = $1 AND expires_at > now() AND last_seen_at + $2::interval > now()),
t AS (
    UPDATE sessions SET last_seen_at = now()
     WHERE hash = $1 AND expires_at > now() AND last_seen_at + $2::interval > now()
       AND last_seen_at < now() - interval '1 minute'
    RETURNING last_seen_at)
SELECT s.id, s.person_id, s.org_id, s.address, s.created_at, coalesce((SELECT last_seen_at FROM t), s.last_seen_at), s.expires_at
  FROM s;

-- name: SetSessionOrg
UPDATE sessions SET org_id = $2 WHERE hash = $1;

-- name: DeleteSession
DELETE FROM sessions WHERE hash = $1;

-- name: EndSessions
DELETE FROM sessions WHERE person_id = $1 AND hash <> coalesce($2, ''::bytea);

-- name: EndSessionsByOwner
-- An owner ends a person's sessions (all of them: a stolen browser is
-- signed out of every organisation), with the row $3 of that organisation
-- ($4–$6: the actor, $7: the action); it returns how many ended.
WITH d AS (DELETE FROM sessions WHERE person_id = $1 AND hash <> coalesce($2, ''::bytea) RETURNING 1),
     a AS (INSERT INTO audit_log (org_id, actor_kind, actor_id, address, action, object, detail)
           SELECT $3, $4, $5, $6, $7, $1, count(*) || ' ended' FROM d)
SELECT count(*) FROM d;

-- name: PutCeremony
INSERT INTO webauthn_ceremonies (hash, state, expires_at) VALUES ($1, $2, $3);

-- name: TakeCeremony
DELETE FROM webauthn_ceremonies WHERE hash = $1 RETURNING state, expires_at > now();

-- name: ReapCeremonies
DELETE FROM webauthn_ceremonies WHERE expires_at < now() - interval '1 hour';

-- name: SpendAttempt
SELECT spend_signin_attempt($1, $2, $3);

-- name: Audit
SELECT id, org_id, actor_kind, actor_id, address, action, object, detail, at
  FROM audit_log WHERE org_id = $1 AND at >= $2 ORDER BY at, id LIMIT nullif($3, 0);
