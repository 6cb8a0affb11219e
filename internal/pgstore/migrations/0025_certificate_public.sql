-- Published certificates (docs/dashboard.md, "Runs and certificates"): an
-- owner may publish the certificate of a complete certification at a
-- public address, /c/{public_id}, which anyone may open without signing
-- in. It is off by default: public_id is NULL until an owner publishes it.
-- Publishing writes a new random id; unpublishing sets it back to NULL, so
-- the address stops answering at once and a later publication is another
-- address. Only the certificate's figures are shown there, never a model
-- id.
ALTER TABLE batches ADD COLUMN public_id text;
CREATE UNIQUE INDEX batches_public_id ON batches (public_id) WHERE public_id IS NOT NULL;
