-- Connected apps registered by dynamic client registration (RFC 7591).
-- A client registered this way is public (no secret): its metadata, as
-- core/oauth accepted it, and whether every redirect URI is native. A
-- client unused for the retention is deleted (DeleteUnusedClients): some
-- clients (Claude) register anew on every fresh connection. Clients
-- described by a metadata document (CIMD) are never stored here: their
-- document is.
CREATE TABLE oauth_clients (
    id            text PRIMARY KEY,
    metadata      jsonb NOT NULL,
    native        boolean NOT NULL,
    address       text NOT NULL DEFAULT '',
    registered_at timestamptz NOT NULL DEFAULT now(),
    last_used_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX oauth_clients_last_used ON oauth_clients (last_used_at);
