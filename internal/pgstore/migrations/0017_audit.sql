-- The audit trail (docs/people.md, "The audit trail"): one append-only row
-- per change a person, a key or the operator made to an organisation,
-- written in the change's own transaction. It never holds a secret.
CREATE TABLE audit_log (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org_id     text NOT NULL REFERENCES orgs (id),
    actor_kind text NOT NULL CHECK (actor_kind IN ('person', 'api_key', 'operator', 'system')),
    actor_id   text NOT NULL DEFAULT '',
    address    text NOT NULL DEFAULT '',
    action     text NOT NULL,
    object     text NOT NULL DEFAULT '',
    detail     text NOT NULL DEFAULT '',
    at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_log_org_at ON audit_log (org_id, at, id);

-- Rows are only ever added.
CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only';
END $$;
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();

-- The person who created a key ('' for the operator's CLI).
ALTER TABLE api_keys ADD COLUMN person_id text NOT NULL DEFAULT '';
