package core

import "context"

// Authorizer decides whether a caller may do something. Its implementation,
// in policies/, evaluates the Rego policies kept there; Go code counts
// (rate, concurrency, money) and policies decide (scopes, entitlements,
// tiers, key restrictions).
type Authorizer interface {
	// Decide returns the decision for one request. An error means the
	// decision could not be made; callers fail closed.
	Decide(ctx context.Context, in *AuthzInput) (*Decision, error)
}

// Actions a request can ask for. Each endpoint maps to one.
const (
	ActionModelsRead    = "models.read"
	ActionChatCreate    = "chat.create"
	ActionEstimate      = "estimate.create"
	ActionReceiptsRead  = "receipts.read"
	ActionTestsCreate   = "tests.create"
	ActionTestsRead     = "tests.read"
	ActionCertifyCreate = "certify.create"
	ActionCertifyRead   = "certify.read"
	ActionModesWrite    = "modes.write"
	// ActionModesRead reads the organisation's own modes (drafts,
	// versions, listing); ActionModesValidate checks a spec, which changes
	// nothing (a test key may).
	ActionModesRead     = "modes.read"
	ActionModesValidate = "modes.validate"
	// ActionModesRelease releases a draft as a version; ActionModesList
	// changes a mode's marketplace listing (asks for it, publishes a
	// version, withdraws it). Keys need modes:write for both.
	ActionModesRelease = "modes.release"
	ActionModesList    = "modes.list"
	// ActionTestsCancel and ActionCertifyCancel cancel a run; a run's
	// Owner is the person who launched it, when a person did.
	ActionTestsCancel   = "tests.cancel"
	ActionCertifyCancel = "certify.cancel"
)

// Actions about the organisation itself, which people (and keys a person
// created) are asked about by the role table of the policy. API keys reach
// none of them on /v1; scopes name none, so a key of no person is refused
// them.
const (
	// ActionKeysCreate creates an API key; the policy bounds its scopes
	// (AuthzInput.Scopes) by the creator's role.
	ActionKeysCreate = "keys.create"
	// ActionKeysRevoke revokes a key; Owner is its creator.
	ActionKeysRevoke = "keys.revoke"
	// ActionKeysLimits sets a key's rate, concurrency, input and cost
	// limits.
	ActionKeysLimits = "keys.limits"
	// ActionPeopleManage invites people, changes roles, removes people and
	// ends their sessions.
	ActionPeopleManage = "people.manage"
	// ActionPeopleRead lists the organisation's people.
	ActionPeopleRead = "people.read"
	// ActionBYOKWrite sets, replaces or removes the organisation's own
	// provider credentials.
	ActionBYOKWrite = "byok.write"
	// ActionAuditRead reads the audit trail.
	ActionAuditRead = "audit.read"
	// ActionJournalRead reads the balance and the journal.
	ActionJournalRead = "journal.read"
	// ActionUsageRead reads the organisation's usage on the dashboard:
	// spend by day and the receipts list ("own": the person's keys' and
	// sessions' only).
	ActionUsageRead = "usage.read"
	// ActionOrgSettings changes the organisation's settings.
	ActionOrgSettings = "org.settings"
	// ActionAppsRead lists the organisation's connected apps ("own": the
	// person's own grants); ActionAppsRevoke revokes one.
	ActionAppsRead   = "apps.read"
	ActionAppsRevoke = "apps.revoke"
)

// AuthzInput is the typed input of a policy decision. Its JSON form is what
// policies see as `input`; see docs/policies.md.
type AuthzInput struct {
	Action    string          `json:"action"`
	Principal *AuthzPrincipal `json:"principal"`
	Org       *AuthzOrg       `json:"org"`
	// Mode is the mode the request names, when it names one.
	Mode *AuthzMode `json:"mode,omitempty"`
	// Tier is the tier the request asks for, when it asks for one.
	Tier Tier `json:"tier,omitempty"`
	// Person is the person acting — signed in, through a connected app,
	// or through a key they created — and their role in Org; nil for a key
	// no person created (or the operator's).
	Person *AuthzPerson `json:"person,omitempty"`
	// Owner is the person who created the object acted on (a key, a run),
	// for the actions whose role grant is "own".
	Owner string `json:"owner,omitempty"`
	// Scopes are the scopes a new key asks for (keys.create).
	Scopes []string `json:"scopes,omitempty"`
}

// AuthzPerson is a person as the policy sees them.
type AuthzPerson struct {
	ID string `json:"id"`
	// Role is their role in the organisation of the request; "" when they
	// are no longer in it (a key they created then can do nothing).
	Role Role `json:"role"`
}

// AuthzPrincipal is who is calling.
type AuthzPrincipal struct {
	Kind   string   `json:"kind"` // PrincipalAPIKey, PrincipalSession or PrincipalOAuthApp
	KeyID  string   `json:"key_id"`
	Test   bool     `json:"test"`
	Scopes []string `json:"scopes"`
	Modes  []string `json:"modes"` // empty: not limited to named modes
}

// AuthzOrg is the caller's organisation.
type AuthzOrg struct {
	ID   string `json:"id"`
	Plan string `json:"plan"`
	// PlanMaxTier and PlanModes are the organisation's plan as the
	// deployment configures it (Plan.MaxTier, Plan.Modes; see WithPlan):
	// the highest tier and the modes open to connected apps. Empty when
	// not filled in; the policy then holds apps to the lowest tier.
	PlanMaxTier Tier     `json:"plan_max_tier,omitempty"`
	PlanModes   []string `json:"plan_modes,omitempty"`
}

// WithPlan fills in what the organisation's plan, p, gives connected apps
// (its highest tier and its modes) and returns o.
func (o *AuthzOrg) WithPlan(p Plan) *AuthzOrg {
	o.PlanMaxTier, o.PlanModes = p.MaxTier, p.Modes
	return o
}

// AuthzMode is the mode a request names.
type AuthzMode struct {
	ID       string   `json:"id"`
	Key      string   `json:"key"`
	Ticker   string   `json:"ticker,omitempty"`
	OwnerOrg string   `json:"owner_org,omitempty"`
	Plans    []string `json:"plans"`
	// Tiers are the tiers the mode has seat rows for.
	Tiers []Tier `json:"tiers"`
	// For an organisation's mode: the version named, the suffix it was
	// named with, its listing state, whether that version is the published
	// one, and whether the caller's organisation is invited to its lab.
	Version   int          `json:"version,omitempty"`
	Suffix    string       `json:"suffix,omitempty"`
	Listing   ListingState `json:"listing,omitempty"`
	Published bool         `json:"published,omitempty"`
	Invited   bool         `json:"invited,omitempty"`
}

// Decision is a policy's answer. When Allow is false, Code says why in the
// wire contract's terms (insufficient_scope, mode_not_permitted, …).
type Decision struct {
	Allow   bool   `json:"allow"`
	Code    Code   `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	// Param, on a denial, names the request parameter it concerns
	// ("model", "tier"), when the policy names one.
	Param string `json:"param,omitempty"`
}

// PrincipalForKey builds the policy view of an API key.
func PrincipalForKey(k *Key) *AuthzPrincipal {
	return &AuthzPrincipal{Kind: PrincipalAPIKey, KeyID: k.ID, Test: k.Test, Scopes: nonNil(k.Scopes), Modes: nonNil(k.Modes)}
}

// PrincipalForPerson builds the policy view of a person acting without a
// key (kind PrincipalSession or PrincipalOAuthApp): no key, every scope —
// the role table, not scopes, bounds what a person may do.
func PrincipalForPerson(kind string) *AuthzPrincipal {
	return &AuthzPrincipal{Kind: kind, Scopes: AllScopes, Modes: []string{}}
}

// OrgForPolicy builds the policy view of an organisation.
func OrgForPolicy(o *Org) *AuthzOrg { return &AuthzOrg{ID: o.ID, Plan: o.Plan} }

// ModeForPolicy builds the policy view of a mode.
func ModeForPolicy(m *Mode) *AuthzMode {
	am := &AuthzMode{ID: m.ID, Key: m.Key, Ticker: m.Ticker, OwnerOrg: m.OwnerOrg, Plans: nonNil(m.Plans), Version: m.Version}
	if r := m.Reach; r != nil {
		am.Suffix, am.Listing, am.Published, am.Invited = r.Suffix, r.Listing, r.Published, r.Invited
	}
	for _, t := range Tiers {
		if len(m.Deliberation.Seats[t]) > 0 {
			am.Tiers = append(am.Tiers, t)
		}
	}
	return am
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
