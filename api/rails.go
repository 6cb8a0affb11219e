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

// admit runs the call's rails in one trip to the store (see
// core.Admission.Admit) with the key's rate and the organisation's slot limit
// filled in. On a refusal other than ErrClaimed it has answered the
// request and returns nil; on ErrClaimed it returns the admission for the
// caller to answer. An admitted call holds a slot, given back by release.
func (h *handler) admit(w http.ResponseWriter, r *http.Request, p *principal, ap *core.AdmitParams) (*core.AdmitResult, *slotLease) {
	ap.KeyID, ap.OrgID, ap.RequestID, ap.Lease = p.key.ID, p.org.ID, RequestID(r.Context()), h.cfg.Lease
	if ap.PerMinute = p.key.RPM; ap.PerMinute == 0 {
		ap.PerMinute = h.cfg.RPM
	}
	if ap.SlotLimit = p.key.Concurrency; ap.SlotLimit == 0 {
		ap.SlotLimit = p.org.Concurrency
	}
	if ap.SlotLimit == 0 {
		ap.SlotLimit = h.cfg.Concurrency
	}
	adm, err := h.rails.Admit(r.Context(), ap)
	if err != nil {
		writeError(w, r, core.Errorf(core.CodeServiceUnavailable, "The call's limits could not be checked; it was refused and nothing was billed. Retry shortly.").WithCause(err))
		return nil, nil
	}
	switch {
	case adm.Refused == nil:
		h.leases.add(ap.RequestID)
		return adm, &slotLease{h: h, r: r, orgID: p.org.ID, requestID: ap.RequestID}
	case errors.Is(adm.Refused, core.ErrClaimed):
		return adm, nil
	case errors.Is(adm.Refused, core.ErrRateLimited):
		e := core.Errorf(core.CodeRateLimitExceeded, "This key is limited to %d requests per minute. Retry after the time in Retry-After.", ap.PerMinute)
		e.RetryAfter = adm.RetryAfter
		writeError(w, r, e)
	case errors.Is(adm.Refused, core.ErrNoSlot):
		e := core.Errorf(core.CodeConcurrencyLimitExceeded, "This organisation already has %d calls in flight, its limit. Retry after the time in Retry-After.", ap.SlotLimit)
		e.RetryAfter = h.cfg.ConcurrencyRetryAfter
		writeError(w, r, e)
	default:
		e := holdError(adm.Refused, ap.Hold.Amount)
		writeError(w, r, e)
		h.recordOutcome(r, core.OutcomeRefused, "the call was refused before any seat fired ("+string(core.AsError(e).Code)+"); nothing was billed")
	}
	return nil, nil
}

// slotLease is a request's concurrency slot.
type slotLease struct {
	h                 *handler
	r                 *http.Request
	orgID, requestID  string
	freedBySettlement bool // the settlement freed it in its transaction
}

// release stops renewing the slot's lease and frees it.
func (l *slotLease) release() {
	l.h.leases.remove(l.requestID)
	if l.freedBySettlement {
		return
	}
	if err := l.h.rails.ReleaseSlot(context.WithoutCancel(l.r.Context()), l.orgID, l.requestID); err != nil {
		// The lease lapses by itself; the slot is free again then.
		l.h.log.WarnContext(l.r.Context(), "releasing a concurrency slot", slog.String("request_id", l.requestID), slog.String("error", err.Error()))
	}
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
	rails core.Admission
	lease time.Duration
	log   *slog.Logger

	mu      sync.Mutex
	live    map[string]struct{}
	running bool
}

func newLeaseKeeper(rails core.Admission, lease time.Duration, log *slog.Logger) *leaseKeeper {
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

// holdError maps a refused hold to the spec's code.
func holdError(err error, ceiling core.Micros) error {
	switch {
	case errors.Is(err, core.ErrNoBilling):
		return core.Errorf(core.CodeNoBillingConfigured, "This organisation has no billing set up: its trial credit has ended and no prepaid balance was added. Add funds to continue.")
	case errors.Is(err, core.ErrInsufficientFunds):
		return core.Errorf(core.CodeInsufficientBalance, "The balance cannot cover this call's ceiling of $%s. Add funds or lower panel.max_cost_usd.", ceiling)
	case errors.Is(err, core.ErrQuotaExceeded):
		return core.Errorf(core.CodeQuotaExceeded, "This call's ceiling of $%s would pass the organisation's monthly spend quota.", ceiling)
	case errors.Is(err, core.ErrVerificationRequired):
		return core.Errorf(core.CodeVerificationRequired, "This organisation is not verified and has used its activation allowance. Verify the organisation to continue.")
	}
	return core.Errorf(core.CodeServiceUnavailable, "The balance could not be checked; nothing was billed. Retry shortly.").WithCause(err)
}

// errNoRails is returned by New when neither Deps.Rails nor the store
// provides the rails.
var errNoRails = errors.New("api: Rails is required (the store does not implement core.Admission)")
