-- The background jobs' scans (internal/jobs).

-- Trial expiry looks at the organisations whose trial has not been closed:
-- those in their first 30 days, and the few whose deduction waits on a hold.
CREATE INDEX balances_trial_open ON balances (org_id) WHERE trial_expired_at IS NULL;

-- The sweeper's expired slot leases (holds_held_expiry in 0002 serves its
-- hold scan, idempotency_keys_updated in 0003 the reaper's).
CREATE INDEX concurrency_slots_lease ON concurrency_slots (lease_until);
