-- Content retention (docs/receipts.md, docs/rationale.md): an organisation
-- keeps its calls' transcripts (the default) or keeps receipts without the
-- text of prompts and answers.
--
-- orgs.keep_transcripts is the owners' setting. The settlement reads it in
-- the statement that writes the receipt (InsertReceipt): when it is off,
-- the receipt's calls and best seat are written without their content, and
-- receipts.transcript_kept records that the text was not kept. The answer
-- stored for idempotent replay (receipts.response) is still written, so a
-- retry with the same Idempotency-Key gets its answer; the idempotency
-- reaper clears it when it deletes the call's claim (ReapIdempotencyKeys).
-- A receipt written before the setting was switched off keeps its text.
ALTER TABLE orgs ADD COLUMN keep_transcripts boolean NOT NULL DEFAULT true;
ALTER TABLE receipts ADD COLUMN transcript_kept boolean NOT NULL DEFAULT true;
