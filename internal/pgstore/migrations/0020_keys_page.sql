-- The keys page lists an organisation's keys fifty at a time, newest
-- first, by a cursor: its index orders them. Keys are created rarely, so
-- the index costs no call anything.
CREATE INDEX api_keys_org_created ON api_keys (org_id, created_at, id);
DROP INDEX api_keys_org;
