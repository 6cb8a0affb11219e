package core

import (
	"context"
	"time"
)

// Store is the system of record: every store interface below in one, for
// wiring in cmd. Its one implementation is PostgreSQL (internal/pgstore);
// core/storetest holds the conformance suite, one section per interface,
// that any implementation must pass. A part of the program that uses the
// store asks for the small interfaces it needs, not for Store. Every method
// is safe for concurrent use.
//
// Methods that read by id return ErrNotFound for an id that does not exist.
// Every balance change is a Posting whose legs sum to zero, written in the same
// transaction as the balance row it changes.
type Store interface {
	Orgs
	Ledger
	Keys
	Admission
	Receipts
	Outcomes
	ProviderCredentials
	People
	Pinger
}

// Orgs holds organisations: who they are, their plan, limits and standing.
// Its methods are safe for concurrent use.
type Orgs interface {
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
	// SetOrgTranscripts sets whether the organisation keeps its calls'
	// transcripts in their receipts (Org.KeepTranscripts), audited as
	// AuditOrgSettings. Receipts written from then on follow it.
	SetOrgTranscripts(ctx context.Context, orgID string, keep bool) (*Org, error)
}

// Ledger holds the organisations' money: each one's balance row and the
// append-only journal whose postings explain it. Money held for calls and
// charged by them moves through Admission; the ledger records it. Its
// methods are safe for concurrent use.
type Ledger interface {
	// AddFunds credits a prepaid top-up to the organisation, journaled.
	AddFunds(ctx context.Context, p *AddFundsParams) (*Balance, error)
	GetBalance(ctx context.Context, orgID string) (*Balance, error)
	// ListPostings returns the organisation's journal, oldest first.
	ListPostings(ctx context.Context, orgID string) ([]*Posting, error)
}

// Keys holds API keys by their hash. The secret never reaches the store.
// Its methods are safe for concurrent use.
type Keys interface {
	// CreateKey stores a key by its hash. A key for an organisation that
	// does not exist returns ErrNotFound.
	CreateKey(ctx context.Context, p *CreateKeyParams) (*Key, error)
	// KeyByHash finds a key and its organisation by the key's SHA-256.
	KeyByHash(ctx context.Context, hash []byte) (*Key, *Org, error)
	// RevokeKey marks the key revoked for good; its record is kept, and
	// revoking it again changes nothing.
	RevokeKey(ctx context.Context, id string) (*Key, error)
	// ListKeys returns the organisation's keys, oldest first, revoked ones
	// included.
	ListKeys(ctx context.Context, orgID string) ([]*Key, error)
	// ListKeysPage returns up to q.Limit of the organisation's keys
	// matching q, newest first, after q.After when set.
	ListKeysPage(ctx context.Context, q *KeyQuery) ([]*Key, error)
}

// KeyQuery selects a page of an organisation's keys. Zero fields do not
// filter.
type KeyQuery struct {
	OrgID string
	// PersonID keeps the keys this person created.
	PersonID string
	// IDs keeps these keys.
	IDs   []string
	After *KeyCursor
	Limit int
}

// KeyCursor is where a page of keys ends.
type KeyCursor struct {
	CreatedAt time.Time
	ID        string
}

// Receipts holds the receipts of billed calls. A receipt is written by
// Admission.SettleCall, in the transaction that charges the call. It is
// safe for concurrent use.
type Receipts interface {
	// GetReceipt returns the organisation's receipt for a call; another
	// organisation's request id returns ErrNotFound.
	GetReceipt(ctx context.Context, orgID, requestID string) (*Receipt, error)
}

// Pinger reports whether a store can serve requests now.
type Pinger interface {
	Ping(ctx context.Context) error
}

// CreateOrgParams are the inputs of Orgs.CreateOrg.
type CreateOrgParams struct {
	Name   string
	Ticker string // optional; derived from Name when empty
	Plan   string // optional; PlanStandard when empty
	// Unverified creates the organisation unverified: it may spend only
	// the activation allowance until SetOrgVerified.
	Unverified bool
}

// SetOrgLimitsParams are the inputs of Orgs.SetOrgLimits. A nil field is
// left unchanged; a zero Concurrency or a negative MonthlyQuota clears it
// back to the default (no override, no quota).
type SetOrgLimitsParams struct {
	OrgID        string
	Concurrency  *int
	MonthlyQuota *Micros
}

// SetOrgSuspendedParams are the inputs of Orgs.SetOrgSuspended.
type SetOrgSuspendedParams struct {
	OrgID     string
	Suspended bool
}

// SetOrgPlanParams are the inputs of Orgs.SetOrgPlan.
type SetOrgPlanParams struct {
	OrgID string
	Plan  string
}

// AddFundsParams are the inputs of Ledger.AddFunds.
type AddFundsParams struct {
	OrgID  string
	Amount Micros // must be positive
	Memo   string
}

// CreateKeyParams are the inputs of Keys.CreateKey.
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
	// PersonID is the person creating the key; "" for the operator.
	PersonID string
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
	// PostingTestCharge and PostingCertifyCharge charge a benchmark run
	// up front, when it is launched: AccountOrgBalance −price,
	// AccountRevenue +price.
	PostingTestCharge    = "test_charge"
	PostingCertifyCharge = "certify_charge"
	// PostingTestRefund and PostingCertifyRefund give back part of such a
	// charge: a question given up on or cancelled, or what a failed batch
	// has left. AccountOrgBalance +amount, AccountRevenue −amount.
	PostingTestRefund    = "test_refund"
	PostingCertifyRefund = "certify_refund"
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
