-- The OpenTelemetry trace of a traced call (docs/observability.md), so that
-- an operator goes from a receipt to its trace. NULL when the call was not
-- traced.
ALTER TABLE receipts ADD COLUMN trace_id text CHECK (trace_id ~ '^[0-9a-f]{32}$');
