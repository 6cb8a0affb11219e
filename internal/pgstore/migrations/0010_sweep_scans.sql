-- Every scan of the sweeper by an index, and one index fewer on holds.
--
-- The sweeper (every 30 s by default) looks for in-flight idempotency
-- claims whose lease has ended. No index served that scan, so it read the
-- whole table: every claim kept for the retention period (24 h by default),
-- finished ones included — at 500 calls/s some 43 million rows per sweep.
-- The claims in flight are few; this partial index holds only them. A claim
-- gets an entry when it is taken and none when its call finishes (the
-- settlement's update already writes new index entries, because
-- updated_at is indexed for the reaper).
CREATE INDEX idempotency_keys_in_flight_lease ON idempotency_keys (locked_until) WHERE state = 'in_flight';

-- holds_org (0002) is the leading column of holds_org_created (0003):
-- every scan by organisation can use the latter, and each hold written or
-- settled paid for both.
DROP INDEX holds_org;
