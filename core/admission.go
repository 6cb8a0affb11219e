package core

import (
	"context"
	"errors"
	"time"
)

// Admission is what a call passes before any seat fires, and the hold's life
// after: the per-key request rate, the per-organisation concurrency slot, the
// idempotency claim, and the money held for the call until it settles or is
// released. Every replica shares them through the store. Every method is one
// short statement (or transaction) and safe for concurrent use across
// processes; a failure to reach the store is returned as an error and callers
// refuse the request (fail closed).
type Admission interface {
	// Admit runs every check of a call in one trip to the store: the rate,
	// a slot (the person's, then the organisation's), the idempotency claim
	// and the hold, in that order; a check
	// that refuses leaves the call holding nothing (the rate is spent). An
	// error means the store could not be asked.
	Admit(ctx context.Context, p *AdmitParams) (*AdmitResult, error)
	// RenewLeases moves the leases of live calls (their hold's expiry,
	// slots and in-flight claim) to now+lease, so only a call whose process died
	// lets them lapse.
	RenewLeases(ctx context.Context, requestIDs []string, lease time.Duration) error
	// ReleaseSlot frees the request's slots (the organisation's, and the
	// person's for plan usage); releasing a free slot does nothing.
	ReleaseSlot(ctx context.Context, orgID, requestID string) error
	// ReleaseClaim deletes the request's in-flight claim, so a retry with
	// the same key runs again (the call failed and billed nothing). Only the
	// claim's own request releases it.
	ReleaseClaim(ctx context.Context, orgID, key, requestID string) error

	// PlaceHold reserves Amount of the organisation's available money
	// (balance − held) for the call RequestID, with one conditional update.
	// When the amount does not fit it returns ErrInsufficientFunds (or
	// ErrNoBilling, which wraps it, when the organisation has no money
	// source left) and changes nothing; the spend rules of the params
	// return ErrQuotaExceeded or ErrVerificationRequired. A RequestID that
	// already has a hold returns ErrConflict.
	PlaceHold(ctx context.Context, p *PlaceHoldParams) (*Hold, error)
	// ReleaseHold frees a hold without charging anything (the call failed
	// and is not billed), and the request's slots with it.
	// Releasing a released hold does nothing; releasing a settled one
	// returns ErrConflict.
	ReleaseHold(ctx context.Context, holdID, orgID string) error
	// SettleCall closes a hold in one transaction: the hold is released, the
	// billed amount (never more than the hold: ErrAboveHold) is charged,
	// trial credit first, and journaled as a PostingCallCharge, and the
	// receipt with its seat and staff rows is written. A hold that is not
	// HoldHeld returns ErrConflict and charges nothing; a hold of another
	// organisation returns ErrNotFound. The request's slots are freed in
	// the same transaction.
	SettleCall(ctx context.Context, p *SettleCallParams) (*Balance, error)
}

// ClaimState is the state of an idempotency claim, as stored.
type ClaimState string

// Idempotency claim states.
const (
	ClaimInFlight  ClaimState = "in_flight" // the claiming call is running
	ClaimSucceeded ClaimState = "succeeded" // a repeat replays the stored answer
	ClaimCapped    ClaimState = "capped"    // a repeat runs and bills again
	ClaimStopped   ClaimState = "stopped"   // stopped mid-charge (launch endpoints)
)

// Claim describes the call that holds an idempotency key another call asked
// for (see AdmitResult.Claim). A key is taken when it is new, or its earlier
// call ended capped, or that call's in-flight lease lapsed.
type Claim struct {
	State       ClaimState
	RequestID   string
	RequestHash []byte
}

// AdmitParams are the inputs of Admission.Admit: the checks one call
// passes, in order. A check whose input is empty is skipped.
type AdmitParams struct {
	KeyID     string
	PerMinute int // the key's rate; 0 skips the rate

	OrgID     string
	RequestID string
	SlotLimit int // the organisation's calls in flight; 0 skips the slot
	Lease     time.Duration

	IdempotencyKey string // "" skips the claim
	// RequestHash is the SHA-256 of what the call asks, kept with the
	// claim so that a repeat can be told from another request on the key.
	RequestHash []byte

	// Hold, when Amount is positive, reserves it as PlaceHold does, with
	// the same spend rules.
	Hold PlaceHoldParams

	// PersonID, when set, makes the call a person's plan usage (a
	// connected app's): its hold is the person's, and the two checks
	// below apply. Empty for every other call.
	PersonID string
	// PersonSlots is how many calls the person may have in flight (the
	// plan's concurrency), counted across replicas apart from the
	// organisation's slots; 0 skips the check. A call over it is refused
	// with ErrPersonBusy.
	PersonSlots int
	// PersonAllowance, when set, is what the person may spend in the
	// calendar month (UTC): their settled bills and live holds this month,
	// read under the lock of the organisation's balance. The hold is then
	// lowered to what is left of it, never raised: AdmitResult.Hold.Amount
	// is the amount held. When what is left is zero or less, or below
	// MinHold, the call is refused with ErrPlanLimit.
	PersonAllowance *Micros
	MinHold         Micros
}

// AdmitResult is the outcome of Admission.Admit.
type AdmitResult struct {
	// Refused is nil when every check admitted the call; otherwise it is
	// the refusal: ErrRateLimited, ErrNoSlot, ErrPersonBusy, ErrClaimed, or
	// a hold error (ErrPlanLimit, ErrInsufficientFunds, ErrNoBilling,
	// ErrQuotaExceeded, ErrVerificationRequired, ErrNotFound).
	Refused error
	// RetryAfter goes with ErrRateLimited.
	RetryAfter time.Duration
	// Claim goes with ErrClaimed: the state and request of the call that
	// holds the key.
	Claim *Claim
	// PersonSpent goes with ErrPlanLimit: what the person's settled bills
	// and live holds of the month already take of their allowance.
	PersonSpent Micros
	// Hold is the call's hold when one was asked for and admitted.
	Hold *Hold
}

// Refusals of Admission.Admit.
var (
	ErrRateLimited = errors.New("over the key's rate")
	ErrNoSlot      = errors.New("every concurrency slot is taken")
	ErrClaimed     = errors.New("another call holds the idempotency key")
	// ErrPersonBusy: the person has their plan's calls in flight
	// (AdmitParams.PersonSlots).
	ErrPersonBusy = errors.New("every slot of the person is taken")
	// ErrPlanLimit: what is left of the person's monthly allowance cannot
	// pay for the call (AdmitParams.PersonAllowance).
	ErrPlanLimit = errors.New("the person's monthly allowance is used up")
)

// PlaceHoldParams are the inputs of Admission.PlaceHold.
type PlaceHoldParams struct {
	OrgID     string
	RequestID string
	Amount    Micros        // must be positive; normally the call's Ceiling
	TTL       time.Duration // DefaultHoldTTL when zero
	// MonthlyQuota, when set, refuses the hold with ErrQuotaExceeded if the
	// organisation's spend this calendar month (UTC; settled bills plus
	// live holds) and Amount would pass it.
	MonthlyQuota *Micros
	// ActivationAllowance, when positive, refuses the hold with
	// ErrVerificationRequired if the organisation's spend over its life
	// (settled bills plus live holds) and Amount would pass it. It is set
	// for unverified organisations only.
	ActivationAllowance Micros
}

// SettleCallParams are the inputs of Admission.SettleCall.
type SettleCallParams struct {
	HoldID string
	OrgID  string
	// Billed is what the call costs the caller (Bill.Billed); zero charges
	// nothing. It must not exceed the hold.
	Billed Micros
	// Receipt, when not nil, is written in the same transaction. Its OrgID
	// and an empty RequestID are filled from the hold; its Billed must equal
	// Billed.
	Receipt *Receipt
	// IdempotencyKey, when set, moves the call's in-flight claim on that key
	// to ClaimState (ClaimSucceeded or ClaimCapped) in the same transaction.
	// A call whose claim is no longer its own (its lease lapsed and another
	// request took the key) is refused with ErrConflict and charges
	// nothing: the key's other call bills.
	IdempotencyKey string
	ClaimState     ClaimState
}
