package core

import "time"

// Org is an organisation: the unit that holds a balance, owns keys and modes,
// and is entitled to modes.
type Org struct {
	ID     string
	Name   string
	Ticker string // four letters A–Z; the company part of a mode ticker
	// Plan names the organisation's plan; policies read it to decide
	// entitlements. New organisations are on PlanStandard.
	Plan        string
	SuspendedAt *time.Time
	CreatedAt   time.Time
	// Concurrency overrides the deployment's calls-in-flight limit for the
	// organisation; zero means the default. A key's own limit wins.
	Concurrency int
	// MonthlyQuota, when set, caps what the organisation may spend in a
	// calendar month (UTC), holds of calls in flight included.
	MonthlyQuota *Micros
	// VerifiedAt is when the organisation was verified; an unverified one
	// may spend only the activation allowance.
	VerifiedAt *time.Time
	// KeepTranscripts is the owners' content-retention setting: true (the
	// default) keeps each call's text in its receipt; false keeps receipts
	// without prompt and answer text. The answer stored for idempotent
	// replay is kept either way until the idempotency reaper removes it.
	KeepTranscripts bool
}

// Verified reports whether the organisation is verified.
func (o *Org) Verified() bool { return o.VerifiedAt != nil }

// Suspended reports whether the organisation is suspended.
func (o *Org) Suspended() bool { return o.SuspendedAt != nil }

// PlanStandard is the plan a new organisation starts on.
const PlanStandard = "standard"

// Balance is an organisation's money position.
type Balance struct {
	OrgID string
	// Balance is the money the organisation has, holds included.
	Balance Micros
	// Held is the part of Balance reserved by calls in flight.
	Held Micros
	// TrialRemaining is the part of Balance that is unspent trial credit.
	TrialRemaining Micros
	UpdatedAt      time.Time
}

// Available is the money a new call may reserve.
func (b *Balance) Available() Micros { return b.Balance - b.Held }

// TrialCredit is what every new organisation receives.
const TrialCredit Micros = 10 * MicrosPerUSD

// Key is an API key's stored record. The secret itself is never stored; only
// its SHA-256 (see HashKey).
type Key struct {
	ID     string
	OrgID  string
	Name   string
	Test   bool     // a ccl_test_ key
	Scopes []string // what the key may do; see Scope constants
	// Modes limits the key to these mode ids (slugs); empty means every mode
	// the organisation is entitled to.
	Modes []string
	// Per-key overrides; zero means the deployment default.
	RPM            int
	Concurrency    int
	MaxInputTokens int
	// Ceiling is the key's own per-call bill ceiling; zero means the default
	// (the higher of $2.00 and the price of the mode called).
	Ceiling Micros
	Hint    string // the key's first characters, safe to display
	// PersonID is the person who created the key; "" for a key the
	// operator's CLI made. Such a key can never do more than its creator's
	// role allows now: the policy reads the role with the key.
	PersonID string
	// CreatorRole is PersonID's role in the key's organisation when the
	// key was looked up; "" when they are no longer in it.
	CreatorRole Role
	ExpiresAt   *time.Time
	RevokedAt   *time.Time
	CreatedAt   time.Time
	// LastUsedAt is when the key was last used, as last flushed from the
	// replicas' memory (every few seconds); nil when never. Read by
	// ListKeys only.
	LastUsedAt *time.Time
}

// Status reports whether the key may be used at t: "" when it may,
// otherwise "revoked" or "expired".
func (k *Key) Status(t time.Time) string {
	switch {
	case k.RevokedAt != nil:
		return "revoked"
	case k.ExpiresAt != nil && !t.Before(*k.ExpiresAt):
		return "expired"
	}
	return ""
}

// Scopes a key can carry. Scope names are Conclave's (the spec leaves them
// open); which endpoint needs which is decided by policy (policies/authz.rego).
const (
	ScopeModelsRead   = "models:read"
	ScopeDeliberate   = "deliberate"
	ScopeEstimate     = "estimate"
	ScopeReceiptsRead = "receipts:read"
	ScopeTests        = "tests"
	ScopeCertify      = "certify"
	ScopeModesWrite   = "modes:write"
)

// AllScopes is every scope, in a stable order. A key created without a scope
// list gets all of them.
var AllScopes = []string{
	ScopeModelsRead, ScopeDeliberate, ScopeEstimate, ScopeReceiptsRead,
	ScopeTests, ScopeCertify, ScopeModesWrite,
}
