-- The organisations a mode's owner invited to its lab versions (every
-- version but the one its listing publishes), and the released version of
-- an organisation's mode a receipt's call ran (null for a configured mode).

CREATE TABLE mode_lab_invites (
    mode_id    text NOT NULL REFERENCES authored_modes (id),
    org_id     text NOT NULL REFERENCES orgs (id),
    invited_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (mode_id, org_id)
);

ALTER TABLE receipts ADD COLUMN mode_version integer CHECK (mode_version > 0);
