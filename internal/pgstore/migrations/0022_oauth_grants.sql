-- The embedded OAuth authorization server (api/oauth, docs/oauth.md):
-- its signing key, the authorization requests in flight, the grants
-- people give connected apps, and the apps' refresh tokens.

-- The issuer's signing keys. The private key is stored here, in PKCS #8
-- DER, because it is the issuer's, not a replica's: every replica signs
-- and verifies with the same key, and a token issued by one is accepted
-- by all. It is created on first use by whichever replica gets there
-- first: a replica inserts a fresh key with ON CONFLICT DO NOTHING on the
-- one active row, then reads the active row back, so two replicas starting
-- together agree on one key. Anyone who can read this table can forge
-- access tokens — as anyone who can write the rest of the database can do
-- worse; the table is the database's to guard. Retired keys (active
-- false) stay until every token they signed has expired, so that a key
-- rotation does not cut live tokens.
CREATE TABLE oauth_signing_keys (
    id          text PRIMARY KEY,
    algorithm   text NOT NULL,
    private_key bytea NOT NULL,
    active      boolean NOT NULL DEFAULT true,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX oauth_signing_keys_one_active ON oauth_signing_keys (active) WHERE active;

-- Authorization requests from the app's redirect to /authorize until
-- their code is exchanged, at most ten minutes (expires_at). The code is
-- kept only as its SHA-256; it is handed out once and taken (deleted) by
-- its exchange. Expired rows are deleted by the oauth sweep job.
CREATE TABLE oauth_auth_requests (
    id             text PRIMARY KEY,
    client_id      text NOT NULL,
    redirect_uri   text NOT NULL,
    state          text NOT NULL DEFAULT '',
    nonce          text NOT NULL DEFAULT '',
    scopes         text[] NOT NULL,
    code_challenge text NOT NULL,
    -- Always S256: plain and missing challenges are refused at /authorize.
    code_challenge_method text NOT NULL DEFAULT 'S256' CHECK (code_challenge_method = 'S256'),
    resource       text NOT NULL,
    done           boolean NOT NULL DEFAULT false,
    person_id      text NOT NULL DEFAULT '',
    org_id         text NOT NULL DEFAULT '',
    grant_id       text NOT NULL DEFAULT '',
    code_hash      bytea UNIQUE,
    created_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz NOT NULL
);
CREATE INDEX oauth_auth_requests_expires ON oauth_auth_requests (expires_at);

-- A person's consent to a connected app, in one organisation, with its
-- scopes (core/oauth.Grant). Revoking it (revoked_at) ends every token
-- issued under it: access tokens at their next grant check, refresh tokens
-- at once (they are deleted). Grants are kept after revocation for the
-- audit and the apps list.
CREATE TABLE oauth_grants (
    id           text PRIMARY KEY,
    client_id    text NOT NULL,
    client_name  text NOT NULL DEFAULT '',
    verified     boolean NOT NULL,
    person_id    text NOT NULL REFERENCES people (id),
    org_id       text NOT NULL REFERENCES orgs (id),
    scopes       text[] NOT NULL,
    resource     text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz NOT NULL DEFAULT now(),
    revoked_at   timestamptz
);
CREATE INDEX oauth_grants_org ON oauth_grants (org_id, created_at DESC);

-- Refresh tokens, only as their SHA-256. Each use rotates the token: the
-- old row gets used_at and a new row is written. A token presented again
-- after its rotation revokes the whole grant. Used and expired rows stay
-- until expires_at so reuse is recognised, then the sweep deletes them.
CREATE TABLE oauth_refresh_tokens (
    hash       bytea PRIMARY KEY,
    grant_id   text NOT NULL REFERENCES oauth_grants (id),
    created_at timestamptz NOT NULL DEFAULT now(),
    used_at    timestamptz,
    expires_at timestamptz NOT NULL
);
CREATE INDEX oauth_refresh_tokens_grant ON oauth_refresh_tokens (grant_id);
CREATE INDEX oauth_refresh_tokens_expires ON oauth_refresh_tokens (expires_at);
