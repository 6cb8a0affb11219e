package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/conclavehq/conclave/core"
)

var _ core.Rails = (*Store)(nil)

// rateWindow is the span a per-minute budget covers: a key may spend its
// whole budget at once, then one request per emission interval.
const rateWindow = time.Minute

// TakeRate implements core.Rails with GCRA in one upsert.
func (s *Store) TakeRate(ctx context.Context, keyID string, perMinute int) (bool, time.Duration, error) {
	if perMinute <= 0 {
		return false, 0, fmt.Errorf("rate limit for key %s: %d per minute is not positive", keyID, perMinute)
	}
	interval := rateWindow / time.Duration(perMinute)
	tolerance := rateWindow - interval
	var tat time.Time
	err := s.pool.QueryRow(ctx, q("TakeRate"), keyID, interval.Microseconds(), tolerance.Microseconds()).Scan(&tat)
	if err == nil {
		return true, 0, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return false, 0, fmt.Errorf("rate limit for key %s: %w", keyID, err)
	}
	var waitMicros int64
	if err := s.pool.QueryRow(ctx, q("RateWait"), keyID, tolerance.Microseconds()).Scan(&waitMicros); err != nil {
		return false, 0, fmt.Errorf("rate limit for key %s: %w", keyID, translate(err))
	}
	return false, time.Duration(waitMicros) * time.Microsecond, nil
}

// slotAttempts bounds how often AcquireSlot retries when another call took
// the free slot it picked.
const slotAttempts = 8

// Above probeAbove slots, AcquireSlot first tries probes random slots.
const (
	probeAbove = 64
	probes     = 3
)

// AcquireSlot implements core.Rails.
func (s *Store) AcquireSlot(ctx context.Context, orgID, requestID string, limit int, lease time.Duration) (bool, error) {
	if limit <= 0 {
		return false, fmt.Errorf("concurrency slot for %s: limit %d is not positive", orgID, limit)
	}
	// A large limit is rarely near full: a random slot is almost always
	// free and costs one index probe. Small limits, and large ones where
	// random probes collide, pick among the free slots.
	if limit > probeAbove {
		for range probes {
			var slot int
			err := s.pool.QueryRow(ctx, q("AcquireSlotAt"), orgID, requestID, rand.IntN(limit), lease.Microseconds()).Scan(&slot)
			if err == nil {
				return true, nil
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return false, fmt.Errorf("concurrency slot for %s: %w", orgID, translate(err))
			}
		}
	}
	for range slotAttempts {
		var slot int
		err := s.pool.QueryRow(ctx, q("AcquireSlot"), orgID, requestID, limit, lease.Microseconds()).Scan(&slot)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return false, fmt.Errorf("concurrency slot for %s: %w", orgID, translate(err))
		}
		// No row: every slot was leased, or another call took the one
		// picked. Only the second is worth another try.
		var free int
		if err := s.pool.QueryRow(ctx, q("FreeSlots"), orgID, limit).Scan(&free); err != nil {
			return false, fmt.Errorf("concurrency slot for %s: %w", orgID, translate(err))
		}
		if free <= 0 {
			return false, nil
		}
	}
	return false, nil
}

// ReleaseSlot implements core.Rails.
func (s *Store) ReleaseSlot(ctx context.Context, orgID, requestID string) error {
	if _, err := s.pool.Exec(ctx, q("FreeSlot"), orgID, requestID); err != nil {
		return fmt.Errorf("releasing the slot of %s: %w", requestID, translate(err))
	}
	return nil
}

// Claim implements core.Rails.
func (s *Store) Claim(ctx context.Context, p *core.ClaimParams) (*core.Claim, error) {
	if len(p.RequestHash) != 32 {
		return nil, fmt.Errorf("claiming an idempotency key: request hash has %d bytes, want 32", len(p.RequestHash))
	}
	// Two statements, not one: a claim that loses must read the winner's
	// row, which the losing INSERT … ON CONFLICT does not return. A winner
	// that finishes between the two is read in its final state; one that
	// is deleted in between (it failed) is claimed again.
	for range 3 {
		var rid string
		err := s.pool.QueryRow(ctx, q("ClaimKey"), p.OrgID, p.Key, p.RequestHash, p.RequestID, p.Lease.Microseconds()).Scan(&rid)
		if err == nil {
			return &core.Claim{Won: true, State: core.ClaimInFlight, RequestID: rid, RequestHash: p.RequestHash}, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("claiming an idempotency key: %w", translate(err))
		}
		c := core.Claim{}
		err = s.pool.QueryRow(ctx, q("GetClaim"), p.OrgID, p.Key).Scan(&c.State, &c.RequestID, &c.RequestHash)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("claiming an idempotency key: %w", translate(err))
		}
		return &c, nil
	}
	return nil, errors.New("claiming an idempotency key: the key changed hands three times")
}

// ReleaseClaim implements core.Rails.
func (s *Store) ReleaseClaim(ctx context.Context, orgID, key, requestID string) error {
	if _, err := s.pool.Exec(ctx, q("ReleaseClaim"), orgID, key, requestID); err != nil {
		return fmt.Errorf("releasing the idempotency claim of %s: %w", requestID, translate(err))
	}
	return nil
}

// RenewLeases implements core.Rails.
func (s *Store) RenewLeases(ctx context.Context, requestIDs []string, lease time.Duration) error {
	if len(requestIDs) == 0 {
		return nil
	}
	var holds, slots, claims int64
	if err := s.pool.QueryRow(ctx, q("RenewLeases"), requestIDs, lease.Microseconds()).Scan(&holds, &slots, &claims); err != nil {
		return fmt.Errorf("renewing %d leases: %w", len(requestIDs), translate(err))
	}
	return nil
}
