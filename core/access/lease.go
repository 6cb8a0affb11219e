package access

import (
	"context"
	"sync"
	"time"

	"github.com/conclavehq/conclave/core"
)

// Quota leasing (docs/limits.md#reads-and-leased-rate): a request that
// only spends a key's rate — a read, a self-answered tool, a request
// refused before its admission — takes it from a share of the key's budget
// this replica leased from the store, rather than a statement each. Billed
// calls keep their one-trip admission (core.Admission.Admit), which spends
// the rate with the slot and the hold.
//
// A lease is carved out of the key's own budget: the store moves the key's
// GCRA state exactly as the admissions it grants would, so what every
// replica leases, plus every billed call, never passes the key's rate; only
// the timing is coarser — a leased request is counted when its lease was
// taken, at most LeaseTTL earlier. What a replica did not use by then goes
// back with its next lease. A key's lease starts at one request and doubles
// while this replica spends each one before it lapses, up to
// min(Config.RateLease, perMinute/8): a key of fewer than 16 requests a
// minute is never leased more than one at a time, so its refusals are as
// exact as a statement per request.

// RateLeaser is the store's side of quota leasing.
type RateLeaser interface {
	// LeaseRate gives back back requests of keyID's budget that a lapsed
	// lease at perMinute did not spend, then takes up to want requests at
	// perMinute, in one trip. granted is 0, with the wait until one fits,
	// when none does.
	LeaseRate(ctx context.Context, keyID string, perMinute, want, back int) (granted int, wait time.Duration, err error)
}

// rateLease is this replica's share of one key's budget.
type rateLease struct {
	mu        sync.Mutex
	left      int // requests leased and not yet spent
	expires   time.Time
	size      int // the next lease's size
	perMinute int
}

// leases are this replica's rate leases, by rate id.
type leases struct {
	mu sync.Mutex
	m  map[string]*rateLease
}

// maxLeasedKeys bounds the leases a replica keeps; past it, the lapsed
// ones are dropped (their unused requests simply stay spent).
const maxLeasedKeys = 100_000

func (ls *leases) of(id string) *rateLease {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if l, ok := ls.m[id]; ok {
		return l
	}
	if len(ls.m) >= maxLeasedKeys {
		now := time.Now()
		for k, l := range ls.m {
			if l.mu.TryLock() {
				if now.After(l.expires) {
					delete(ls.m, k)
				}
				l.mu.Unlock()
			}
		}
	}
	l := &rateLease{size: 1}
	if len(ls.m) < maxLeasedKeys {
		ls.m[id] = l
	}
	return l
}

// leaseCap is the most requests of a key leased at once.
func (s *Service) leaseCap(perMinute int) int {
	return max(1, min(s.cfg.RateLease, perMinute/8))
}

// spendLeased spends one request of p's rate from this replica's lease,
// leasing again when it is spent or lapsed.
func (s *Service) spendLeased(ctx context.Context, leaser RateLeaser, p *Principal, perMinute int) error {
	l := s.leases.of(p.RateID())
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if l.left > 0 && l.perMinute == perMinute && now.Before(l.expires) {
		l.left--
		return nil
	}
	back := l.left
	switch {
	case l.perMinute != perMinute:
		// The key's rate changed: what is left was leased at the old
		// one, and stays spent (the budget earns it back within a
		// minute).
		l.size, back = 1, 0
	case l.left == 0 && now.Before(l.expires):
		l.size = min(2*l.size, s.leaseCap(perMinute)) // spent before it lapsed: a busy key
	case l.left > 0:
		l.size = max(1, l.size/2) // lapsed unspent: a quieter key
	}
	l.size = min(l.size, s.leaseCap(perMinute))
	l.left, l.perMinute = 0, perMinute
	granted, wait, err := leaser.LeaseRate(ctx, p.RateID(), perMinute, l.size, back)
	if err != nil {
		return core.Errorf(core.CodeServiceUnavailable, "The key's rate could not be checked; the request was refused. Retry shortly.").WithCause(err)
	}
	if granted == 0 {
		l.expires = time.Time{}
		return s.RateLimited(p, wait)
	}
	l.left, l.expires = granted-1, now.Add(s.cfg.RateLeaseTTL)
	return nil
}
