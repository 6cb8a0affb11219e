-- Fewer writes per call: the slot lease unlogged, two indexes fewer.
--
-- A billed call writes a slot, an idempotency claim and a hold, and its
-- settlement updates the claim and the hold and deletes the slot. Every
-- row written is a WAL record, and so is every index entry; an update that
-- changes an indexed column (the claim's and the hold's state both are)
-- writes a new entry in each of the table's indexes.
--
-- concurrency_slots becomes UNLOGGED, as rate_limits is (0003): a slot is
-- a lease on a call in flight, and nothing else depends on it being kept.
-- PostgreSQL empties an unlogged table when it recovers from a crash (not
-- after a clean shutdown), and a standby does not have it; then the calls
-- in flight at that moment hold no slot until they end, so for at most one
-- lease the organisation may have more calls in flight than its limit.
-- Nothing else changes: a settlement or a release deletes its slot whether
-- or not it is still there, and no money, claim or receipt is in the table.
--
-- Its lease index goes: only the sweeper (every 30 s) looked slots up by
-- lease, and the table holds the calls in flight and nothing else, so
-- reading it whole is cheaper than an index entry for every call.
DROP INDEX concurrency_slots_lease;
ALTER TABLE concurrency_slots SET UNLOGGED;

-- idempotency_keys_request indexed every claim kept for the retention
-- period (24 h by default: some 43 million at 500 calls/s) by request,
-- and took an entry when a claim was taken and another when its call
-- finished. Claims are looked up by request only while in flight (lease
-- renewal, the sweeper's release): the partial index of the claims in
-- flight, now by request, serves those, and the sweeper's scan of expired
-- in-flight claims reads that small index whole.
DROP INDEX idempotency_keys_request;
DROP INDEX idempotency_keys_in_flight_lease;
CREATE INDEX idempotency_keys_in_flight ON idempotency_keys (request_id) WHERE state = 'in_flight';
