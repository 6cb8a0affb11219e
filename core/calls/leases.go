package calls

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/conclavehq/conclave/core"
)

// leaseKeeper renews the leases (hold expiry, concurrency slot, in-flight
// idempotency claim) of this process's live calls in one statement every
// third of a lease, so a call's leases lapse only when its process died.
// It runs from start to stop; a tick with no live call costs nothing.
type leaseKeeper struct {
	admission core.Admission
	lease     time.Duration
	log       *slog.Logger

	mu   sync.Mutex
	live map[string]struct{}

	started  atomic.Bool
	stopOnce sync.Once
	quit     chan struct{}
	done     chan struct{}
}

func newLeaseKeeper(admission core.Admission, lease time.Duration, log *slog.Logger) *leaseKeeper {
	return &leaseKeeper{admission: admission, lease: lease, log: log, live: map[string]struct{}{},
		quit: make(chan struct{}), done: make(chan struct{})}
}

func (k *leaseKeeper) add(requestID string) {
	k.mu.Lock()
	k.live[requestID] = struct{}{}
	k.mu.Unlock()
}

func (k *leaseKeeper) remove(requestID string) {
	k.mu.Lock()
	delete(k.live, requestID)
	k.mu.Unlock()
}

// start runs the renewals until stop; ctx carries values only.
func (k *leaseKeeper) start(ctx context.Context) {
	k.started.Store(true)
	go k.loop(context.WithoutCancel(ctx))
}

// stop ends the renewals and waits for the loop to return. Safe to call
// twice, and before start (it then waits for nothing).
func (k *leaseKeeper) stop() {
	k.stopOnce.Do(func() { close(k.quit) })
	if !k.started.Load() {
		return
	}
	// A renewal in flight ends within half a lease.
	<-k.done
}

func (k *leaseKeeper) loop(ctx context.Context) {
	defer close(k.done)
	every := k.lease / 3
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-k.quit:
			return
		case <-t.C:
		}
		k.mu.Lock()
		ids := make([]string, 0, len(k.live))
		for id := range k.live {
			ids = append(ids, id)
		}
		k.mu.Unlock()
		began := time.Now()
		if len(ids) > 0 {
			// Up to half a lease: a renewal that waits for a connection on
			// a busy pool still lands well before the leases lapse.
			rctx, cancel := context.WithTimeout(ctx, k.lease/2)
			if err := k.admission.RenewLeases(rctx, ids, k.lease); err != nil {
				k.log.Warn("renewing call leases", slog.Int("calls", len(ids)), slog.String("error", err.Error()))
			}
			cancel()
		}
		t.Reset(max(every-time.Since(began), every/10))
	}
}
