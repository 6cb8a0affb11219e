-- Refunds and cancellation of benchmark batches (docs/tests.md, "Refunds").
--
-- Each question carries its share of the launch's charge (price_micros): a
-- test question its band's discounted price, a certification's question an
-- exact split of the $50 (the shares of a batch add up to its charge). A
-- question given up on (failed) or cancelled is refunded its share in the
-- transaction that finishes it, conditional on its being pending, so it is
-- refunded once; a batch that fails is refunded whatever of its charge is
-- left. refunded_micros counts what the batch gave back, and can never pass
-- what it charged. trial_micros is the part of the charge trial credit paid
-- (spent first); trial_refunded_micros the part of it given back as trial
-- credit, which refunds give back first.
--
-- A batch may now also move queued | running → cancelled (final): its
-- pending questions move to cancelled, counted in batches.cancelled.

ALTER TABLE batch_questions ADD COLUMN price_micros bigint NOT NULL DEFAULT 0 CHECK (price_micros >= 0);
ALTER TABLE batch_questions DROP CONSTRAINT batch_questions_state_check;
ALTER TABLE batch_questions ADD CONSTRAINT batch_questions_state_check
    CHECK (state IN ('pending', 'judged', 'failed', 'cancelled'));

-- Batches launched before this migration: the shares their launch would
-- have recorded. Their charge's trial part is unknown, and counted as none.
UPDATE batch_questions q
   SET price_micros = coalesce((b.quote -> 'buckets' -> q.bucket ->> 'per_question_micros')::bigint, 0)
  FROM batches b
 WHERE b.id = q.batch_id AND b.kind = 'test';
UPDATE batch_questions q
   SET price_micros = b.billed_micros / b.total + CASE WHEN q.index < b.billed_micros % b.total THEN 1 ELSE 0 END
  FROM batches b
 WHERE b.id = q.batch_id AND b.kind = 'certify';

ALTER TABLE batches ADD COLUMN cancelled integer NOT NULL DEFAULT 0 CHECK (cancelled >= 0);
ALTER TABLE batches ADD COLUMN refunded_micros bigint NOT NULL DEFAULT 0 CHECK (refunded_micros >= 0);
ALTER TABLE batches ADD COLUMN trial_micros bigint NOT NULL DEFAULT 0 CHECK (trial_micros >= 0);
ALTER TABLE batches ADD COLUMN trial_refunded_micros bigint NOT NULL DEFAULT 0 CHECK (trial_refunded_micros >= 0);
ALTER TABLE batches ADD CONSTRAINT refund_within_charge CHECK (refunded_micros <= billed_micros);
ALTER TABLE batches ADD CONSTRAINT trial_within_charge
    CHECK (trial_micros <= billed_micros AND trial_refunded_micros <= trial_micros AND trial_refunded_micros <= refunded_micros);

ALTER TABLE batches DROP CONSTRAINT batches_status_check;
ALTER TABLE batches ADD CONSTRAINT batches_status_check
    CHECK (status IN ('queued', 'running', 'complete', 'failed', 'cancelled'));
ALTER TABLE batches DROP CONSTRAINT counts_within_total;
ALTER TABLE batches ADD CONSTRAINT counts_within_total CHECK (answered <= total AND judged + failed + cancelled <= total);
ALTER TABLE batches DROP CONSTRAINT finished_when_final;
ALTER TABLE batches ADD CONSTRAINT finished_when_final
    CHECK ((status IN ('complete', 'failed', 'cancelled')) = (finished_at IS NOT NULL));
-- A cancelled batch may never have started: queued → cancelled.
ALTER TABLE batches DROP CONSTRAINT started_when_running;
ALTER TABLE batches ADD CONSTRAINT started_when_running CHECK (status IN ('queued', 'cancelled') OR started_at IS NOT NULL);
ALTER TABLE batches ADD CONSTRAINT queued_not_started CHECK (status <> 'queued' OR started_at IS NULL);
