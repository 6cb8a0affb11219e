-- Organisations' own modes (core.ModeStore): one row per mode holding its
-- one draft and where its lifecycle stands, and one row per released
-- version, never changed once written.
--
-- The rules of the lifecycle are Go's (core.ModeState.Apply); this schema
-- holds what Go decided and refuses only what no rule could allow: two
-- modes with one ticker, one organisation with two modes of one name, a
-- state outside the lifecycle's, a certified or published version past the
-- latest released one, and any change to a released version.

CREATE TABLE authored_modes (
    id                text PRIMARY KEY CHECK (id ~ '^[a-z]{4}-[a-z]{4}$'),
    org_id            text NOT NULL REFERENCES orgs (id),
    ticker            text NOT NULL CHECK (ticker ~ '^[A-Z]{4}:[A-Z]{4}$'),
    name              text NOT NULL CHECK (name <> ''),
    draft_revision    bigint NOT NULL CHECK (draft_revision > 0),
    draft_state       text NOT NULL CHECK (draft_state IN ('pending', 'released')),
    draft_validated   boolean NOT NULL,
    draft_spec        json NOT NULL,
    draft_saved_at    timestamptz NOT NULL DEFAULT now(),
    latest_version    integer NOT NULL DEFAULT 0 CHECK (latest_version >= 0),
    listing_state     text NOT NULL DEFAULT 'none'
                      CHECK (listing_state IN ('none', 'pending', 'approved', 'rejected', 'delisted')),
    listing_revision  bigint NOT NULL DEFAULT 0 CHECK (listing_revision >= 0),
    certified_version integer NOT NULL DEFAULT 0 CHECK (certified_version BETWEEN 0 AND latest_version),
    published_version integer NOT NULL DEFAULT 0 CHECK (published_version BETWEEN 0 AND latest_version),
    created_at        timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT authored_modes_ticker UNIQUE (ticker)
);

-- The name is unique within the organisation, whatever its case.
CREATE UNIQUE INDEX authored_modes_org_name ON authored_modes (org_id, lower(name));

CREATE TABLE mode_versions (
    mode_id     text NOT NULL REFERENCES authored_modes (id),
    version     integer NOT NULL CHECK (version > 0),
    spec        json NOT NULL,
    mode        jsonb NOT NULL,
    config_hash text NOT NULL CHECK (config_hash <> ''),
    released_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (mode_id, version)
);

CREATE FUNCTION mode_versions_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'released mode versions are immutable: % on % refused', TG_OP, TG_TABLE_NAME;
END $$;

CREATE TRIGGER mode_versions_immutable BEFORE UPDATE OR DELETE ON mode_versions
    FOR EACH ROW EXECUTE FUNCTION mode_versions_immutable();
