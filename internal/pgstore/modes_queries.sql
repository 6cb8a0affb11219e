-- Named queries of organisations' own modes (modes.go). Every column list
-- of authored_modes is the one scanAuthoredMode reads, in its order, but
-- a listing's, which leaves out the draft's spec (scanListedMode).

-- name: OrgTicker
-- Locks the organisation's row (not against the inserts that refer to it)
-- while a new mode is saved, so that two new modes of one organisation are
-- counted against its cap one after the other.
SELECT ticker FROM orgs WHERE id = $1 FOR NO KEY UPDATE;

-- name: CountAuthoredModes
SELECT count(*) FROM authored_modes WHERE org_id = $1;

-- name: InsertAuthoredMode
INSERT INTO authored_modes (id, org_id, ticker, name, draft_revision, draft_state, draft_validated, draft_spec,
                            listing_state)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
RETURNING id, org_id, ticker, name, draft_revision, draft_state, draft_validated, latest_version, listing_state,
          listing_revision, certified_version, published_version, draft_spec, draft_saved_at, created_at;

-- name: AuthoredModeByID
SELECT id, org_id, ticker, name, draft_revision, draft_state, draft_validated, latest_version, listing_state,
       listing_revision, certified_version, published_version, draft_spec, draft_saved_at, created_at
  FROM authored_modes WHERE id = $1;

-- name: AuthoredModeByRef
SELECT id, org_id, ticker, name, draft_revision, draft_state, draft_validated, latest_version, listing_state,
       listing_revision, certified_version, published_version, draft_spec, draft_saved_at, created_at
  FROM authored_modes WHERE id = $1 OR ticker = $1;

-- name: AuthoredModesOfOrg
-- A listing: every column but the draft's spec, which no listing shows
-- (scanListedMode reads these).
SELECT id, org_id, ticker, name, draft_revision, draft_state, draft_validated, latest_version, listing_state,
       listing_revision, certified_version, published_version, draft_saved_at, created_at
  FROM authored_modes WHERE org_id = $1 ORDER BY ticker;

-- name: PublishedAuthoredModes
-- A listing, as AuthoredModesOfOrg.
SELECT id, org_id, ticker, name, draft_revision, draft_state, draft_validated, latest_version, listing_state,
       listing_revision, certified_version, published_version, draft_saved_at, created_at
  FROM authored_modes WHERE listing_state = 'approved' AND published_version > 0 ORDER BY ticker;

-- name: UpdateAuthoredMode
-- Writes the state core.ModeState.Apply returned, only if the mode still
-- holds both revisions the state was read at ($2, $3): the conditional
-- write that makes one of two concurrent writers lose. $12 says whether
-- the draft was saved now.
UPDATE authored_modes
   SET draft_revision = $4, draft_state = $5, draft_validated = $6, latest_version = $7, listing_state = $8,
       listing_revision = $9, certified_version = $10, published_version = $11,
       draft_saved_at = CASE WHEN $12::boolean THEN now() ELSE draft_saved_at END,
       name = $13, draft_spec = $14
 WHERE id = $1 AND draft_revision = $2 AND listing_revision = $3
RETURNING id, org_id, ticker, name, draft_revision, draft_state, draft_validated, latest_version, listing_state,
          listing_revision, certified_version, published_version, draft_spec, draft_saved_at, created_at;

-- name: InsertModeVersion
-- The released spec is the draft's, copied in SQL from the row the same
-- transaction just released.
INSERT INTO mode_versions (mode_id, version, spec, mode, config_hash)
SELECT id, $2, draft_spec, $3, $4 FROM authored_modes WHERE id = $1
RETURNING mode_id, version, spec, mode, config_hash, released_at;

-- name: ModeVersion
SELECT mode_id, version, spec, mode, config_hash, released_at
  FROM mode_versions WHERE mode_id = $1 AND version = $2;

-- name: ModeVersions
-- Several versions in one trip, for the listing of modes: $1 and $2 are
-- parallel arrays of mode ids and versions; the answer is in their order.
-- Every column but the released spec, which the listing does not show
-- (scanListedVersion reads these).
SELECT v.mode_id, v.version, v.mode, v.config_hash, v.released_at
  FROM unnest($1::text[], $2::integer[]) WITH ORDINALITY AS want (mode_id, version, n)
  JOIN mode_versions v ON v.mode_id = want.mode_id AND v.version = want.version
 ORDER BY want.n;

-- name: InviteToLab
-- Invites the organisation with ticker $3 to mode $1 of organisation $2.
-- The same one statement whether or not another organisation has the
-- ticker, and no error either way: a ticker no other organisation has
-- inserts nothing, and an invitation already there is left as it is (no
-- write, as for a ticker no organisation has).
INSERT INTO mode_lab_invites (mode_id, org_id)
SELECT m.id, o.id FROM authored_modes m, orgs o
 WHERE m.id = $1 AND m.org_id = $2 AND o.ticker = $3 AND o.id <> $2
ON CONFLICT (mode_id, org_id) DO NOTHING;

-- name: UninviteFromLab
DELETE FROM mode_lab_invites i USING orgs o
 WHERE i.mode_id = $1 AND i.org_id = o.id AND o.ticker = $2;

-- name: LabInvites
SELECT o.ticker FROM mode_lab_invites i JOIN orgs o ON o.id = i.org_id WHERE i.mode_id = $1 ORDER BY o.ticker;

-- name: LabInvited
SELECT EXISTS (SELECT 1 FROM mode_lab_invites WHERE mode_id = $1 AND org_id = $2);
