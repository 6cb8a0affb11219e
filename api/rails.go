package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/conclavehq/conclave/core"
)

// The rails a call passes before any seat fires, in order: the key's rate,
// an organisation concurrency slot, then (chat only) the idempotency claim
// and the money hold. Every counter is in the store, so the limits hold
// across any number of replicas; when the store cannot be reached the call
// is refused with 503 service_unavailable, never let through unmetered.

// takeRate counts the request against its key's per-minute budget; on
// refusal it has answered the request.
func (h *handler) takeRate(w http.ResponseWriter, r *http.Request, p *principal) bool {
	rpm := p.key.RPM
	if rpm == 0 {
		rpm = h.cfg.RPM
	}
	ok, wait, err := h.rails.TakeRate(r.Context(), p.key.ID, rpm)
	if err != nil {
		writeError(w, r, core.Errorf(core.CodeServiceUnavailable, "The rate limit could not be checked; the request was refused and nothing was billed. Retry shortly.").WithCause(err))
		return false
	}
	if !ok {
		e := core.Errorf(core.CodeRateLimitExceeded, "This key is limited to %d requests per minute. Retry after the time in Retry-After.", rpm)
		e.RetryAfter = wait
		writeError(w, r, e)
		return false
	}
	return true
}

// takeSlot leases one of the organisation's concurrency slots for the
// request and returns the function that gives it back; on refusal it has
// answered the request.
func (h *handler) takeSlot(w http.ResponseWriter, r *http.Request, p *principal, requestID string) (func(), bool) {
	limit := p.key.Concurrency
	if limit == 0 {
		limit = p.org.Concurrency
	}
	if limit == 0 {
		limit = h.cfg.Concurrency
	}
	ok, err := h.rails.AcquireSlot(r.Context(), p.org.ID, requestID, limit, h.cfg.Lease)
	if err != nil {
		writeError(w, r, core.Errorf(core.CodeServiceUnavailable, "The concurrency limit could not be checked; the request was refused and nothing was billed. Retry shortly.").WithCause(err))
		return nil, false
	}
	if !ok {
		e := core.Errorf(core.CodeConcurrencyLimitExceeded, "This organisation already has %d calls in flight, its limit. Retry after the time in Retry-After.", limit)
		e.RetryAfter = h.cfg.ConcurrencyRetryAfter
		writeError(w, r, e)
		return nil, false
	}
	h.leases.add(requestID)
	return func() {
		h.leases.remove(requestID)
		if err := h.rails.ReleaseSlot(context.WithoutCancel(r.Context()), p.org.ID, requestID); err != nil {
			// The lease lapses by itself; the slot is free again then.
			h.log.WarnContext(r.Context(), "releasing a concurrency slot", slog.String("request_id", requestID), slog.String("error", err.Error()))
		}
	}, true
}

// maxIdempotencyKey is the longest Idempotency-Key accepted.
const maxIdempotencyKey = 255

// idempotencyKey returns the call's idempotency key: the Idempotency-Key
// header, or one derived from the organisation, the key, the model and the
// messages, so that an identical repeat is deduplicated.
func idempotencyKey(r *http.Request, p *principal, model string, messages []core.Message) (string, error) {
	if v, ok := r.Header[http.CanonicalHeaderKey("Idempotency-Key")]; ok {
		k := ""
		if len(v) > 0 {
			k = v[0]
		}
		if len(v) != 1 || k == "" || len(k) > maxIdempotencyKey || !visibleASCII(k) {
			return "", core.Errorf(core.CodeInvalidRequest, "Idempotency-Key must be one header of 1 to %d visible ASCII characters.", maxIdempotencyKey).WithParam("Idempotency-Key")
		}
		return k, nil
	}
	msgs, err := json.Marshal(messages)
	if err != nil {
		return "", err
	}
	sum := sha256.New()
	for _, part := range [][]byte{[]byte(p.org.ID), []byte(p.key.ID), []byte(model), msgs} {
		var n [8]byte
		for i, l := 0, len(part); i < 8; i, l = i+1, l>>8 {
			n[i] = byte(l)
		}
		sum.Write(n[:])
		sum.Write(part)
	}
	return "derived:" + hex.EncodeToString(sum.Sum(nil)), nil
}

func visibleASCII(s string) bool {
	for i := range len(s) {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// requestHash identifies a request body for the idempotency record.
func requestHash(v any) []byte {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return sum[:]
}

// leaseKeeper renews the leases (hold expiry, concurrency slot, in-flight
// idempotency claim) of this process's live calls in one statement every
// third of a lease, so a call's leases lapse only when its process died.
// Its goroutine runs only while calls are live.
type leaseKeeper struct {
	rails core.Rails
	lease time.Duration
	log   *slog.Logger

	mu      sync.Mutex
	live    map[string]struct{}
	running bool
}

func newLeaseKeeper(rails core.Rails, lease time.Duration, log *slog.Logger) *leaseKeeper {
	return &leaseKeeper{rails: rails, lease: lease, log: log, live: map[string]struct{}{}}
}

func (k *leaseKeeper) add(requestID string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.live[requestID] = struct{}{}
	if !k.running {
		k.running = true
		go k.loop()
	}
}

func (k *leaseKeeper) remove(requestID string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.live, requestID)
}

func (k *leaseKeeper) loop() {
	every := k.lease / 3
	t := time.NewTimer(every)
	defer t.Stop()
	for range t.C {
		k.mu.Lock()
		if len(k.live) == 0 {
			k.running = false
			k.mu.Unlock()
			return
		}
		ids := make([]string, 0, len(k.live))
		for id := range k.live {
			ids = append(ids, id)
		}
		k.mu.Unlock()
		began := time.Now()
		// Up to half a lease: a renewal that waits for a connection on a
		// busy pool still lands well before the leases lapse.
		ctx, cancel := context.WithTimeout(context.Background(), k.lease/2)
		if err := k.rails.RenewLeases(ctx, ids, k.lease); err != nil {
			k.log.Warn("renewing call leases", slog.Int("calls", len(ids)), slog.String("error", err.Error()))
		}
		cancel()
		t.Reset(max(every-time.Since(began), every/10))
	}
}

// errNoRails is returned by New when neither Deps.Rails nor the store
// provides the rails.
var errNoRails = errors.New("api: Rails is required (the store does not implement core.Rails)")
