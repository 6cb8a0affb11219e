package core

import (
	"context"
	"errors"
	"time"
)

// Rails are the admission counters every replica shares through the store:
// per-key request rates, per-organisation concurrency slots and idempotency
// claims. Every method is one short statement (or transaction) and safe for
// concurrent use across processes; a failure to reach the store is returned
// as an error and callers refuse the request (fail closed).
type Rails interface {
	// ReleaseSlot frees the request's slot; releasing a free slot does
	// nothing.
	ReleaseSlot(ctx context.Context, orgID, requestID string) error
	// ReleaseClaim deletes the request's in-flight claim, so a retry with
	// the same key runs again (the call failed and billed nothing).
	ReleaseClaim(ctx context.Context, orgID, key, requestID string) error
	// Admit runs every rail of a call in one trip to the store: the rate,
	// a slot, the idempotency claim and the hold, in that order; a rail
	// that refuses leaves the call holding nothing (the rate is spent). An
	// error means the store could not be asked.
	Admit(ctx context.Context, p *AdmitParams) (*Admission, error)
	// RenewLeases moves the leases of live calls (their hold's expiry, slot
	// and in-flight claim) to now+lease, so only a call whose process died
	// lets them lapse.
	RenewLeases(ctx context.Context, requestIDs []string, lease time.Duration) error
}

// Idempotency claim states.
const (
	ClaimInFlight  = "in_flight" // the claiming call is running
	ClaimSucceeded = "succeeded" // a repeat replays the stored answer
	ClaimCapped    = "capped"    // a repeat runs and bills again
	ClaimStopped   = "stopped"   // stopped mid-charge (launch endpoints)
)

// Claim describes the call that holds an idempotency key another call asked
// for (see Admission.Claim). A key is taken when it is new, or its earlier
// call ended capped, or that call's in-flight lease lapsed.
type Claim struct {
	State       string
	RequestID   string
	RequestHash []byte
}

// AdmitParams are the inputs of Rails.Admit: the rails one call passes, in
// order. A rail whose input is empty is skipped.
type AdmitParams struct {
	KeyID     string
	PerMinute int // the key's rate; 0 skips the rate

	OrgID     string
	RequestID string
	SlotLimit int // the organisation's calls in flight; 0 skips the slot
	Lease     time.Duration

	IdempotencyKey string // "" skips the claim
	RequestHash    []byte

	// Hold, when Amount is positive, reserves it as PlaceHold does, with
	// the same spend rules.
	Hold PlaceHoldParams
}

// Admission is the outcome of Rails.Admit.
type Admission struct {
	// Refused is nil when every rail admitted the call; otherwise it is
	// the refusal: ErrRateLimited, ErrNoSlot, ErrClaimed, or a hold error
	// (ErrInsufficientFunds, ErrNoBilling, ErrQuotaExceeded,
	// ErrVerificationRequired, ErrNotFound).
	Refused error
	// RetryAfter goes with ErrRateLimited.
	RetryAfter time.Duration
	// Claim goes with ErrClaimed: the state and request of the call that
	// holds the key.
	Claim *Claim
	// Hold is the call's hold when one was asked for and admitted.
	Hold *Hold
}

// Refusals of Rails.Admit.
var (
	ErrRateLimited = errors.New("over the key's rate")
	ErrNoSlot      = errors.New("every concurrency slot is taken")
	ErrClaimed     = errors.New("another call holds the idempotency key")
)
