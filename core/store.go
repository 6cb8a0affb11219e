package core

import (
	"context"
	"time"
)

// Store is the system of record. Its one implementation is Postgres
// (internal/pgstore); core/storetest holds the conformance suite any
// implementation must pass. Every method is safe for concurrent use.
//
// Methods that read by id return ErrNotFound for an id that does not exist.
// Every balance change is a Posting whose legs sum to zero, written in the same
// transaction as the balance row it changes.
type Store interface {
	// CreateOrg creates an organisation and grants it the trial credit
	// (TrialCredit), journaled. A Ticker of "" is derived from the name.
	// A ticker already in use returns ErrConflict.
	CreateOrg(ctx context.Context, p *CreateOrgParams) (*Org, *Balance, error)
	GetOrg(ctx context.Context, id string) (*Org, error)
	OrgByTicker(ctx context.Context, ticker string) (*Org, error)
	SetOrgSuspended(ctx context.Context, p *SetOrgSuspendedParams) (*Org, error)
	SetOrgPlan(ctx context.Context, p *SetOrgPlanParams) (*Org, error)
	// SetOrgLimits sets the organisation's concurrency override and monthly
	// quota (nil fields are left as they are; see SetOrgLimitsParams).
	SetOrgLimits(ctx context.Context, p *SetOrgLimitsParams) (*Org, error)
	// SetOrgVerified marks the organisation verified (or not).
	SetOrgVerified(ctx context.Context, orgID string, verified bool) (*Org, error)

	// AddFunds credits a prepaid top-up to the organisation, journaled.
	AddFunds(ctx context.Context, p *AddFundsParams) (*Balance, error)
	GetBalance(ctx context.Context, orgID string) (*Balance, error)
	// ListPostings returns the organisation's journal, oldest first.
	ListPostings(ctx context.Context, orgID string) ([]*Posting, error)

	// CreateKey stores a key by its hash. The secret never reaches the store.
	CreateKey(ctx context.Context, p *CreateKeyParams) (*Key, error)
	// KeyByHash finds a key and its organisation by the key's SHA-256.
	KeyByHash(ctx context.Context, hash []byte) (*Key, *Org, error)
	RevokeKey(ctx context.Context, id string) (*Key, error)
	ListKeys(ctx context.Context, orgID string) ([]*Key, error)

	// PlaceHold reserves Amount of the organisation's available money
	// (balance − held) for the call RequestID, with one conditional update.
	// When the amount does not fit it returns ErrInsufficientFunds (or
	// ErrNoBilling, which wraps it, when the organisation has no money
	// source left) and changes nothing; the spend rules of the params
	// return ErrQuotaExceeded or ErrVerificationRequired. A RequestID that already has a hold returns
	// ErrConflict.
	PlaceHold(ctx context.Context, p *PlaceHoldParams) (*Hold, error)
	// SettleCall closes a hold in one transaction: the hold is released, the
	// billed amount (never more than the hold: ErrAboveHold) is charged,
	// trial credit first, and journaled as a PostingCallCharge, and the
	// receipt with its seat and staff rows is written. A hold that is not
	// HoldHeld returns ErrConflict and charges nothing; a hold of another
	// organisation returns ErrNotFound. The request's concurrency slot is
	// freed in the same transaction.
	SettleCall(ctx context.Context, p *SettleCallParams) (*Balance, error)
	// ReleaseHold frees a hold without charging anything (the call failed
	// and is not billed), and the request's concurrency slot with it. Releasing a released hold does nothing; releasing
	// a settled one returns ErrConflict.
	ReleaseHold(ctx context.Context, holdID, orgID string) error
	// GetReceipt returns the organisation's receipt for a call; another
	// organisation's request id returns ErrNotFound.
	GetReceipt(ctx context.Context, orgID, requestID string) (*Receipt, error)

	// Ping reports whether the store can serve requests now.
	Ping(ctx context.Context) error
}

// CreateOrgParams are the inputs of Store.CreateOrg.
type CreateOrgParams struct {
	Name   string
	Ticker string // optional; derived from Name when empty
	Plan   string // optional; PlanStandard when empty
	// Unverified creates the organisation unverified: it may spend only
	// the activation allowance until SetOrgVerified.
	Unverified bool
}

// SetOrgLimitsParams are the inputs of Store.SetOrgLimits. A nil field is
// left unchanged; a zero Concurrency or a negative MonthlyQuota clears it
// back to the default (no override, no quota).
type SetOrgLimitsParams struct {
	OrgID        string
	Concurrency  *int
	MonthlyQuota *Micros
}

// SetOrgSuspendedParams are the inputs of Store.SetOrgSuspended.
type SetOrgSuspendedParams struct {
	OrgID     string
	Suspended bool
}

// SetOrgPlanParams are the inputs of Store.SetOrgPlan.
type SetOrgPlanParams struct {
	OrgID string
	Plan  string
}

// AddFundsParams are the inputs of Store.AddFunds.
type AddFundsParams struct {
	OrgID  string
	Amount Micros // must be positive
	Memo   string
}

// CreateKeyParams are the inputs of Store.CreateKey.
type CreateKeyParams struct {
	OrgID          string
	Hash           []byte
	Hint           string
	Name           string
	Test           bool
	Scopes         []string
	Modes          []string
	RPM            int
	Concurrency    int
	MaxInputTokens int
	Ceiling        Micros
	ExpiresAt      *time.Time
}

// PlaceHoldParams are the inputs of Store.PlaceHold.
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

// SettleCallParams are the inputs of Store.SettleCall.
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
	ClaimState     string
}

// Journal accounts. A leg moves money into (positive) or out of (negative)
// one account; the legs of a posting sum to zero.
const (
	// AccountOrgBalance is an organisation's prepaid balance.
	AccountOrgBalance = "org_balance"
	// AccountTrialIssued is where trial credit comes from.
	AccountTrialIssued = "trial_issued"
	// AccountCashIn is where prepaid top-ups come from.
	AccountCashIn = "cash_in"
	// AccountRevenue is where the money billed for calls goes.
	AccountRevenue = "revenue"
)

// Posting kinds.
const (
	PostingTrialGrant = "trial_grant"
	PostingTopUp      = "top_up"
	PostingCallCharge = "call_charge"
)

// Posting is one balanced journal transaction.
type Posting struct {
	ID        int64
	Kind      string
	OrgID     string
	Memo      string
	CreatedAt time.Time
	Legs      []Leg
}

// Leg is one line of a Posting.
type Leg struct {
	Account string
	OrgID   string // the organisation whose account this is; "" for system accounts
	Amount  Micros
}
