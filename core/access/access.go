// Package access decides who is calling and what they may do, for every
// carrier alike: it turns a bearer secret (an API key today, an OAuth access
// token later) into a Principal, with a short-lived cache of hashed-key
// lookups, asks the Authorizer whether the principal may act, and meters the
// key's request rate. REST and MCP extract the secret from their own
// transport and render the *core.Error this package returns.
package access

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/expiring"
)

// Principal is an authenticated caller: the key that called, or the person
// acting (signed in on the pages, or through a connected app), and the
// organisation they act in.
type Principal struct {
	// Key is the API key that called; nil when a person acts without one.
	Key *core.Key
	Org *core.Org
	// Person is the person acting, with Role, their role in Org: set for a
	// session and a connected app; nil for an API key (whose creator, if
	// any, is Key.PersonID with Key.CreatorRole).
	Person *core.Person
	Role   core.Role
	// Kind is core.PrincipalSession or core.PrincipalOAuthApp for a person;
	// ignored when Key is set (core.PrincipalAPIKey).
	Kind string
	// Address is the client address of the request (server.trusted_proxies
	// decides which); the audit trail records it.
	Address string
	// Scopes, GrantID and ClientID are a connected app's (kind
	// core.PrincipalOAuthApp): the scopes its person granted it, the grant
	// and the app. Empty otherwise.
	Scopes   []string
	GrantID  string
	ClientID string
	// Refusal, when set, is why the principal may do nothing: a connected
	// app whose token verified but whose grant no longer stands. Only
	// AuthenticateBearer returns such a principal; every call it makes
	// answers Refusal.
	Refusal *core.Error
}

// PrincipalKind is p's kind as the policy sees it.
func (p *Principal) PrincipalKind() string {
	if p.Key != nil {
		return core.PrincipalAPIKey
	}
	return p.Kind
}

// OnPlan reports whether p's calls are plan usage: a connected app's
// (core.PrincipalOAuthApp), billed at real cost and held to the
// organisation's plan (Service.Plan). An API key's and a signed-in
// person's are not.
func (p *Principal) OnPlan() bool { return p.Key == nil && p.Kind == core.PrincipalOAuthApp }

// RateID is what p's request rate is counted by, and what owns its
// idempotency claims (a repeat is answered only to its caller): the key's
// id, or the person's ("person_…") when a person acts without a key — with
// "app:" before it for a connected app, whose rate is its plan's and whose
// calls are plan usage, apart from the same person's calls on the pages.
func (p *Principal) RateID() string {
	switch {
	case p.Key != nil:
		return p.Key.ID
	case p.Kind == core.PrincipalOAuthApp:
		return "app:" + p.Person.ID
	}
	return p.Person.ID
}

// PersonID is the person behind p: the person acting, or the creator of
// the key that called; "" for a key the operator made.
func (p *Principal) PersonID() string {
	if p.Person != nil {
		return p.Person.ID
	}
	if p.Key != nil {
		return p.Key.PersonID
	}
	return ""
}

// Actor is p as the audit trail names who made a change.
func (p *Principal) Actor() core.Actor {
	if p.Key != nil {
		return core.Actor{Kind: core.ActorKey, ID: p.Key.ID, Address: p.Address}
	}
	return core.Actor{Kind: core.ActorPerson, ID: p.Person.ID, Address: p.Address}
}

// PolicyInput is the policy's view of p doing action: its principal, its
// organisation and, when a person acts (or a key a person created), that
// person and their role.
func (p *Principal) PolicyInput(action string) *core.AuthzInput {
	in := &core.AuthzInput{Action: action, Org: core.OrgForPolicy(p.Org)}
	switch {
	case p.Key != nil:
		in.Principal = core.PrincipalForKey(p.Key)
		if p.Key.PersonID != "" {
			in.Person = &core.AuthzPerson{ID: p.Key.PersonID, Role: p.Key.CreatorRole}
		}
	default:
		in.Principal = core.PrincipalForPerson(p.Kind)
		if p.Kind == core.PrincipalOAuthApp {
			// An app may do what its person may, within the scopes granted.
			in.Principal.Scopes = append([]string{}, p.Scopes...)
		}
		in.Person = &core.AuthzPerson{ID: p.Person.ID, Role: p.Role}
	}
	return in
}

// KeyLookup finds a key and its organisation by the key's SHA-256; a key
// that does not exist returns core.ErrNotFound. core.Store satisfies it.
type KeyLookup interface {
	KeyByHash(ctx context.Context, hash []byte) (*core.Key, *core.Org, error)
}

// Meter spends one request of a key's rate; core.Admission satisfies it.
type Meter interface {
	Admit(ctx context.Context, p *core.AdmitParams) (*core.AdmitResult, error)
}

// Config configures a Service.
type Config struct {
	// KeyCacheTTL is how long a successful key lookup is reused; 0 turns
	// caching off. A revocation or suspension takes effect within it.
	// Defaults to 0.
	KeyCacheTTL time.Duration
	// RPM is the requests per minute of a key that sets none. Defaults to
	// 60.
	RPM int
	// Concurrency is the calls in flight of an organisation whose key and
	// organisation set none. Defaults to 5.
	Concurrency int
	// PersonRPM is the requests per minute of a person acting without a
	// key (signed in on the pages). Defaults to 60.
	PersonRPM int
	// Plans are the configured plans, by name: a connected app's tier,
	// modes, rate, calls in flight and monthly allowance come from its
	// organisation's (see Service.Plan). Defaults to none: every
	// organisation's connected apps are on an unconfigured plan (the
	// lowest tier, no allowance).
	Plans core.Plans
	// RateLease is the most requests of a key one replica leases from the
	// store at once when its meter can lease (RateLeaser): reads spend
	// them with no trip each. 1 turns leasing off (a statement per
	// request). Defaults to 32.
	RateLease int
	// RateLeaseTTL is how long a lease may be spent; what is left then
	// goes back to the key's budget with the next lease. Defaults to 1s.
	RateLeaseTTL time.Duration
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.RPM == 0 {
		c.RPM = 60
	}
	if c.Concurrency == 0 {
		c.Concurrency = 5
	}
	if c.PersonRPM == 0 {
		c.PersonRPM = 60
	}
	if c.RateLease == 0 {
		c.RateLease = 32
	}
	if c.RateLeaseTTL == 0 {
		c.RateLeaseTTL = time.Second
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.KeyCacheTTL < 0 || c.KeyCacheTTL > 10*time.Second:
		return errors.New("access: KeyCacheTTL must be between 0 and 10s")
	case c.RateLease < 0 || c.RateLease > 1024:
		return errors.New("access: RateLease must be between 1 and 1024")
	case c.RateLeaseTTL < 0 || c.RateLeaseTTL > 10*time.Second:
		return errors.New("access: RateLeaseTTL must be between 0 and 10s")
	case c.RPM < 0 || c.Concurrency < 0 || c.PersonRPM < 0:
		return errors.New("access: RPM, Concurrency and PersonRPM cannot be negative")
	}
	for name, p := range c.Plans {
		if p.Name != name || p.MaxTier.Rank() == 0 || p.Allowance < 0 || p.Concurrency < 1 || p.RPM < 1 {
			return fmt.Errorf("access: plan %q needs its name, a tier, an allowance of at least 0 and a concurrency and rpm of at least 1", name)
		}
	}
	return nil
}

// Service authenticates, authorizes and meters callers. It is safe for
// concurrent use.
type Service struct {
	cfg   Config
	authz core.Authorizer
	meter Meter
	keys  *keyCache

	// refusedUntil remembers, per key id, until when the store said the
	// key's rate is spent: no request of the key fits before then (a
	// refused request spends nothing), so until then a request is refused
	// at once, before any validation work and with no trip to the store.
	mu           sync.Mutex
	refusedUntil map[string]time.Time

	// used is when each key last authenticated, flushed by KeepLastUsed.
	used lastUsed

	// tokens and grants, when set (UseTokens), authenticate connected apps.
	tokens   TokenVerifier
	grants   *grantCache
	verified *tokenCache
	// lacks remembers LacksScope's answers by action and scopes.
	lacks sync.Map
	// leases are this replica's shares of keys' rates, when meter can
	// lease (RateLeaser) and Config.RateLease is above 1.
	leaser RateLeaser
	leases leases
}

// New returns a Service reading keys from keys, deciding with authz and
// metering rates with meter.
func New(cfg Config, keys KeyLookup, authz core.Authorizer, meter Meter) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if keys == nil || authz == nil || meter == nil {
		return nil, errors.New("access: a key lookup, an Authorizer and a Meter are required")
	}
	s := &Service{cfg: cfg, authz: authz, meter: meter, keys: newKeyCache(keys, cfg.KeyCacheTTL),
		refusedUntil: map[string]time.Time{}, leases: leases{m: map[string]*rateLease{}}}
	if l, ok := meter.(RateLeaser); ok && cfg.RateLease > 1 {
		s.leaser = l
	}
	return s, nil
}

// Authenticate resolves a bearer secret ("" when the caller sent none) to
// its principal, an API key: invalid_api_key for a missing, malformed or unknown key,
// revoked_api_key for a revoked or expired one, org_suspended, and
// service_unavailable when the key could not be checked (fail closed).
func (s *Service) Authenticate(ctx context.Context, secret string) (*Principal, error) {
	if secret == "" {
		return nil, core.Errorf(core.CodeInvalidAPIKey, "Send your API key as 'Authorization: Bearer ccl_live_…'.")
	}
	if !core.WellFormedKey(secret) {
		return nil, core.Errorf(core.CodeInvalidAPIKey, "The API key is malformed. Keys start with ccl_live_ or ccl_test_.")
	}
	key, org, err := s.keys.lookup(ctx, core.HashKey(secret))
	switch {
	case errors.Is(err, core.ErrNotFound):
		return nil, core.Errorf(core.CodeInvalidAPIKey, "The API key is not recognised.")
	case err != nil:
		return nil, core.Errorf(core.CodeServiceUnavailable, "The key could not be checked; the request was refused. Retry shortly.").WithCause(err)
	}
	now := time.Now()
	if status := key.Status(now); status != "" {
		return nil, core.Errorf(core.CodeRevokedAPIKey, "The API key is %s. Issue a new key.", status)
	}
	s.used.touch(key.ID, now)
	p := &Principal{Key: key, Org: org}
	if org.Suspended() {
		return p, core.Errorf(core.CodeOrgSuspended, "The organisation is suspended.")
	}
	return p, s.Spent(p)
}

// Decide asks the policy whether p may do action (on mode, at tier, when
// given). A policy without a code for its refusal refuses with
// insufficient_scope.
func (s *Service) Decide(ctx context.Context, p *Principal, action string, mode *core.Mode, tier core.Tier) (*core.Decision, error) {
	in := p.PolicyInput(action)
	in.Tier = tier
	if mode != nil {
		in.Mode = core.ModeForPolicy(mode)
	}
	d, err := s.decide(ctx, in)
	if err == nil && !d.Allow && d.Code == "" {
		d.Code = core.CodeInsufficientScope
	}
	return d, err
}

// AuthorizeOwned asks the policy whether p may do action in its
// organisation on what owner (a person id) created — the "own" grants of
// the role table; owner "" asks for the "any" grant. A principal in no
// organisation is refused.
func (s *Service) AuthorizeOwned(ctx context.Context, p *Principal, action, owner string) error {
	if p.Org == nil {
		return core.Errorf(core.CodeForbidden, "You are not in an organisation yet.")
	}
	in := p.PolicyInput(action)
	in.Owner = owner
	return s.AuthorizeInput(ctx, in)
}

// AuthorizeInput is Authorize for an input the caller completed (Owner,
// Scopes): nil when allowed, the policy's refusal when not.
func (s *Service) AuthorizeInput(ctx context.Context, in *core.AuthzInput) error {
	d, err := s.decide(ctx, in)
	if err != nil {
		return PolicyFailure(err)
	}
	if d.Allow {
		return nil
	}
	if d.Code == "" {
		d.Code = core.CodeForbidden
	}
	return &core.Error{Code: d.Code, Message: d.Message}
}

// decide asks the policy about in, with the organisation's plan filled in
// as the deployment configures it (the policy holds connected apps to it).
func (s *Service) decide(ctx context.Context, in *core.AuthzInput) (*core.Decision, error) {
	if in.Org != nil {
		in.Org.WithPlan(s.cfg.Plans.Of(in.Org.Plan))
	}
	return s.authz.Decide(ctx, in)
}

// Plan is the plan p's organisation is on, as configured (core.Plans.Of:
// a name the deployment does not configure gives connected apps the
// lowest tier and no allowance). It binds p only when p.OnPlan.
func (s *Service) Plan(p *Principal) core.Plan { return s.cfg.Plans.Of(p.Org.Plan) }

// Authorize is Decide as an error: nil when allowed, the policy's refusal
// (with the parameter it concerns) when not, and service_unavailable when
// the policy could not decide (fail closed).
func (s *Service) Authorize(ctx context.Context, p *Principal, action string, mode *core.Mode, tier core.Tier) error {
	d, err := s.Decide(ctx, p, action, mode, tier)
	if err != nil {
		return PolicyFailure(err)
	}
	if d.Allow {
		return nil
	}
	e := &core.Error{Code: d.Code, Message: d.Message}
	switch d.Code {
	case core.CodeTierNotPermitted:
		e.Param = "tier"
	case core.CodeModelNotFound:
		// Whatever hid the mode, the answer is the unknown mode's, word
		// for word.
		return core.ModelNotFound()
	case core.CodeModeNotPermitted:
		if mode != nil {
			e.Param = "model"
		}
	}
	if d.Param != "" {
		e.Param = d.Param
	}
	return e
}

// PolicyFailure is the answer when the policy could not decide: fail closed.
func PolicyFailure(err error) *core.Error {
	return core.Errorf(core.CodeServiceUnavailable, "The access check failed; the request was refused. Retry shortly.").WithCause(err)
}

// RPM is the requests per minute p may make: its key's own, else the
// deployment's default for keys; a connected app, its plan's per-person
// rate; a person signed in, the per-person rate.
func (s *Service) RPM(p *Principal) int {
	switch {
	case p.OnPlan():
		return s.Plan(p).RPM
	case p.Key == nil:
		return s.cfg.PersonRPM
	case p.Key.RPM > 0:
		return p.Key.RPM
	}
	return s.cfg.RPM
}

// SlotLimit is how many calls p's organisation may have in flight: the
// key's own limit, else the organisation's, else the deployment's default.
func (s *Service) SlotLimit(p *Principal) int {
	switch {
	case p.Key != nil && p.Key.Concurrency > 0:
		return p.Key.Concurrency
	case p.Org.Concurrency > 0:
		return p.Org.Concurrency
	}
	return s.cfg.Concurrency
}

// Meter spends one request of p's rate for a request that takes no other
// admission step (a read, or a request refused before its admission): nil
// when within the rate, rate_limit_exceeded with Retry-After when over it,
// service_unavailable when the rate could not be checked (fail closed).
// Billed calls and estimates spend their rate in their own admission
// instead, in the same trip to the store.
func (s *Service) Meter(ctx context.Context, p *Principal, requestID string) error {
	if err := s.Spent(p); err != nil {
		return err
	}
	perMinute := s.RPM(p)
	if s.leaser != nil && s.leaseCap(perMinute) > 1 {
		return s.spendLeased(ctx, s.leaser, p, perMinute)
	}
	adm, err := s.meter.Admit(ctx, &core.AdmitParams{KeyID: p.RateID(), PerMinute: perMinute, OrgID: p.Org.ID, RequestID: requestID})
	if err != nil {
		return core.Errorf(core.CodeServiceUnavailable, "The key's rate could not be checked; the request was refused. Retry shortly.").WithCause(err)
	}
	if adm.Refused != nil {
		return s.RateLimited(p, adm.RetryAfter)
	}
	return nil
}

// Spent answers rate_limit_exceeded, with no trip to the store, while p's
// key's rate is known to be spent (a refusal's Retry-After has not
// passed): a request made then could not fit. Nil otherwise. Every
// admission that spends the key's rate asks it first, so a key past its
// rate costs no database trip per request — nor per message of an MCP
// batch, whose messages are admitted one by one after the request was
// authenticated.
func (s *Service) Spent(p *Principal) error {
	if wait := s.refusedFor(p.RateID()); wait > 0 {
		return rateLimited(p, s.RPM(p), wait)
	}
	return nil
}

// Refused answers a request refused before its admission (a bad body, an
// unknown mode, a prompt over the input limit): it spends the request's
// rate like any other, and answers rate_limit_exceeded instead of the
// refusal once the rate is spent. Valid requests spend theirs in their
// admission, so this costs them nothing.
func (s *Service) Refused(ctx context.Context, p *Principal, requestID string, refusal error) error {
	if err := s.Meter(ctx, p, requestID); err != nil && core.AsError(err).Code == core.CodeRateLimitExceeded {
		return err
	}
	return refusal
}

// RateLimited is the refusal of p's request over its key's rate; it also
// refuses the key's next requests at once until retryAfter has passed.
func (s *Service) RateLimited(p *Principal, retryAfter time.Duration) *core.Error {
	if retryAfter > 0 {
		s.mu.Lock()
		if len(s.refusedUntil) >= maxRefusedKeys {
			now := time.Now()
			for id, until := range s.refusedUntil {
				if !now.Before(until) {
					delete(s.refusedUntil, id)
				}
			}
		}
		if len(s.refusedUntil) < maxRefusedKeys {
			s.refusedUntil[p.RateID()] = time.Now().Add(retryAfter)
		}
		s.mu.Unlock()
	}
	return rateLimited(p, s.RPM(p), retryAfter)
}

// maxRefusedKeys bounds the memory of keys over their rate; past it a key
// is simply asked about in the store again.
const maxRefusedKeys = 100_000

// refusedFor is how long keyID's rate is known to stay spent; 0 when not.
func (s *Service) refusedFor(keyID string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	until, ok := s.refusedUntil[keyID]
	if !ok {
		return 0
	}
	wait := time.Until(until)
	if wait <= 0 {
		delete(s.refusedUntil, keyID)
		return 0
	}
	return wait
}

func rateLimited(p *Principal, perMinute int, retryAfter time.Duration) *core.Error {
	who := "You are" // a person on the pages
	switch {
	case p.Key != nil:
		who = "This key is"
	case p.Kind == core.PrincipalOAuthApp:
		who = "Your connected apps are"
	}
	e := core.Errorf(core.CodeRateLimitExceeded, "%s limited to %d requests per minute. Retry after the time in Retry-After.", who, perMinute)
	e.RetryAfter = retryAfter
	return e
}

// keyCache caches successful key lookups by key hash for a few seconds, so a
// busy key does not cost a database round trip per request. It never holds a
// secret. Unknown keys are not cached. Safe for concurrent use.
type keyCache struct {
	store   KeyLookup
	ttl     time.Duration
	entries *expiring.Map[string, keyEntry]
}

type keyEntry struct {
	key *core.Key
	org *core.Org
}

func newKeyCache(store KeyLookup, ttl time.Duration) *keyCache {
	return &keyCache{store: store, ttl: ttl, entries: expiring.New[string, keyEntry](10_000)}
}

func (c *keyCache) lookup(ctx context.Context, hash []byte) (*core.Key, *core.Org, error) {
	if c.ttl <= 0 {
		return c.store.KeyByHash(ctx, hash)
	}
	now := time.Now()
	if e, ok := c.entries.Get(string(hash), now); ok {
		return e.key, e.org, nil
	}
	key, org, err := c.store.KeyByHash(ctx, hash)
	if err != nil {
		return nil, nil, err
	}
	c.entries.Put(string(hash), keyEntry{key: key, org: org}, now.Add(c.ttl), now)
	return key, org, nil
}
