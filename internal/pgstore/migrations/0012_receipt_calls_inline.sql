-- A receipt's calls stored in the receipt's row.
--
-- A settlement wrote its receipt as one row in receipts and one row per
-- seat and staff call in receipt_calls, in one statement that unnested
-- nineteen arrays into the second table. Seen from PostgreSQL at 500 calls/s
-- that statement took 129 µs of the settlement's transaction, more than any
-- other in it; the receipt's calls were a fifth of the call's write-ahead
-- log. Nothing reads a call of a receipt apart from its receipt (GET
-- /v1/receipts reads them all, in order), so they become one JSON array in
-- the receipt's row: one row and one index entry per receipt, whatever the
-- number of seats.
--
-- The money stays in columns with its checks: the receipt's billed amount,
-- token charge, surcharge, fee and credit, and the check that they add up.
-- The checks receipt_calls made on each call (tokens, cost and fee not
-- negative, the fee rate within 0-100%, the kind a seat or staff) are made
-- by the store before it writes a receipt (pgstore.validReceiptCall).
--
-- Each call is an object with the columns of receipt_calls as keys (the
-- money in integer micro-USD; what is null or empty left out), seats
-- first, then staff, each in order.
ALTER TABLE receipts ADD COLUMN calls jsonb NOT NULL DEFAULT '[]';

UPDATE receipts r
   SET calls = c.calls
  FROM (SELECT request_id,
               jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                   'kind', kind, 'role', role, 'model_used', model_used, 'original_model', original_model,
                   'fallback_used', fallback_used, 'judge_score', judge_score, 'is_best_seat', is_best_seat,
                   'round_number', round_number, 'tokens_in', tokens_in, 'tokens_out', tokens_out,
                   'latency_ms', latency_ms, 'started_at', started_at, 'ended_at', ended_at, 'source', source,
                   'real_cost_micros', real_cost_micros, 'fee_rate_ppm', fee_rate_ppm, 'fee_micros', fee_micros,
                   'content', nullif(content, '')))
                 ORDER BY kind, ordinal) AS calls
          FROM receipt_calls
         GROUP BY request_id) c
 WHERE c.request_id = r.request_id;

DROP TABLE receipt_calls;
