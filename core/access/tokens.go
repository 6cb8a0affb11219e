package access

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/oauth"
)

// TokenVerifier checks a connected app's access token in-process: its
// signature, issuer, audience and expiry. A token that fails is
// invalid_oauth_token; one that could not be checked (the keys unreadable)
// is oauth_unavailable.
type TokenVerifier interface {
	VerifyToken(ctx context.Context, token string) (*oauth.Token, error)
}

// GrantLookup is what a verified token is checked against: its grant, the
// person's membership and the organisation. core.Store with the grant
// store satisfies it.
type GrantLookup interface {
	Grant(ctx context.Context, id string) (*oauth.Grant, error)
	GetPerson(ctx context.Context, id string) (*core.Person, error)
	Membership(ctx context.Context, personID, orgID string) (*core.Membership, error)
	GetOrg(ctx context.Context, id string) (*core.Org, error)
}

// DefaultGrantCacheTTL is how long a grant found standing is believed: a
// revocation, or a person leaving the organisation, ends the app's calls
// within it.
const DefaultGrantCacheTTL = 10 * time.Second

// UseTokens makes Authenticate accept connected apps' access tokens beside
// API keys: a bearer secret that is not an API key is verified by v and
// its grant checked in grants, the answer reused for ttl (0:
// DefaultGrantCacheTTL; at most 30s).
func (s *Service) UseTokens(v TokenVerifier, grants GrantLookup, ttl time.Duration) error {
	if v == nil || grants == nil {
		return errors.New("access: UseTokens needs a verifier and a grant lookup")
	}
	if ttl == 0 {
		ttl = DefaultGrantCacheTTL
	}
	if ttl < 0 || ttl > 30*time.Second {
		return errors.New("access: the grant cache TTL must be between 0 and 30s")
	}
	s.tokens, s.grants = v, &grantCache{lookup: grants, ttl: ttl, entries: map[string]grantEntry{}}
	return nil
}

// TakesTokens reports whether AuthenticateBearer accepts access tokens.
func (s *Service) TakesTokens() bool { return s.tokens != nil }

// AuthenticateBearer is Authenticate for the tool server, which also takes
// connected apps' access tokens (when UseTokens was called): a token that
// fails verification is invalid_oauth_token, one that could not be checked
// oauth_unavailable. A token that verifies but whose grant no longer
// stands (revoked, or its person left the organisation) returns a
// principal with Refusal set, invalid_oauth_token: the request is answered,
// its calls refused.
func (s *Service) AuthenticateBearer(ctx context.Context, secret string) (*Principal, error) {
	if s.tokens != nil && secret != "" && !isAPIKey(secret) {
		return s.authenticateToken(ctx, secret)
	}
	return s.Authenticate(ctx, secret)
}

// authenticateToken resolves a connected app's access token to its
// principal: the person the grant is theirs, acting in its organisation
// with its scopes.
func (s *Service) authenticateToken(ctx context.Context, token string) (*Principal, error) {
	t, err := s.tokens.VerifyToken(ctx, token)
	if err != nil {
		e := core.AsError(err)
		if e.Code != core.CodeInvalidOAuthToken && e.Code != core.CodeOAuthUnavailable {
			e = core.Errorf(core.CodeOAuthUnavailable, "The access token could not be checked; the request was refused. Retry shortly.").WithCause(err)
		}
		return nil, e
	}
	st, err := s.grants.state(ctx, t)
	if err != nil {
		return nil, core.Errorf(core.CodeOAuthUnavailable, "The app's grant could not be checked; the request was refused. Retry shortly.").WithCause(err)
	}
	if st.refusal != "" {
		return &Principal{Kind: core.PrincipalOAuthApp, Person: &core.Person{ID: t.PersonID}, Org: &core.Org{ID: t.OrgID},
			GrantID: t.GrantID, ClientID: t.ClientID,
			Refusal: core.Errorf(core.CodeInvalidOAuthToken, "%s Sign in again to reconnect the app.", st.refusal)}, nil
	}
	p := &Principal{Org: st.org, Person: st.person, Role: st.role, Kind: core.PrincipalOAuthApp,
		Scopes: t.Scopes, GrantID: t.GrantID, ClientID: t.ClientID}
	if st.org.Suspended() {
		return p, core.Errorf(core.CodeOrgSuspended, "The organisation is suspended.")
	}
	return p, s.Spent(p)
}

// isAPIKey tells an API key from anything else sent as a bearer secret.
func isAPIKey(secret string) bool { return strings.HasPrefix(secret, "ccl_") }

// grantState is what a grant check found: the person, role and
// organisation when the grant stands, else why it does not.
type grantState struct {
	person  *core.Person
	role    core.Role
	org     *core.Org
	refusal string
}

// grantCache remembers grant checks for a few seconds, so that an app's
// busy token does not cost three database trips per request. Safe for
// concurrent use.
type grantCache struct {
	lookup GrantLookup
	ttl    time.Duration

	mu      sync.Mutex
	entries map[string]grantEntry
}

type grantEntry struct {
	st      grantState
	expires time.Time
}

// maxGrantEntries bounds the cache; past it, expired entries are dropped
// and, if still full, the check is simply not cached.
const maxGrantEntries = 50_000

// state checks t's grant: standing, the token's person and organisation
// its own, the person still a member there.
func (c *grantCache) state(ctx context.Context, t *oauth.Token) (grantState, error) {
	key := t.GrantID + "\x00" + t.PersonID + "\x00" + t.OrgID
	now := time.Now()
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.st, nil
	}
	st, err := c.check(ctx, t)
	if err != nil {
		return st, err
	}
	c.mu.Lock()
	if len(c.entries) >= maxGrantEntries {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
	}
	if len(c.entries) < maxGrantEntries {
		c.entries[key] = grantEntry{st: st, expires: now.Add(c.ttl)}
	}
	c.mu.Unlock()
	return st, nil
}

func (c *grantCache) check(ctx context.Context, t *oauth.Token) (grantState, error) {
	g, err := c.lookup.Grant(ctx, t.GrantID)
	switch {
	case errors.Is(err, core.ErrNotFound):
		return grantState{refusal: "The app's grant no longer exists."}, nil
	case err != nil:
		return grantState{}, err
	case g.Revoked():
		return grantState{refusal: "The app's access was revoked."}, nil
	case g.PersonID != t.PersonID || g.OrgID != t.OrgID:
		return grantState{refusal: "The token does not match its grant."}, nil
	}
	m, err := c.lookup.Membership(ctx, t.PersonID, t.OrgID)
	switch {
	case errors.Is(err, core.ErrNotFound):
		return grantState{refusal: "The person who connected the app is no longer in the organisation."}, nil
	case err != nil:
		return grantState{}, err
	}
	person, err := c.lookup.GetPerson(ctx, t.PersonID)
	switch {
	case errors.Is(err, core.ErrNotFound):
		return grantState{refusal: "The person who connected the app no longer exists."}, nil
	case err != nil:
		return grantState{}, err
	}
	org, err := c.lookup.GetOrg(ctx, t.OrgID)
	if err != nil {
		return grantState{}, err
	}
	return grantState{person: person, role: m.Role, org: org}, nil
}

// LacksScope reports whether p, a connected app, was granted no scope for
// action: the policy refuses it insufficient_scope before anything else
// about the request matters. Always false for other principals, whose
// refusals are answered where the action is taken.
func (s *Service) LacksScope(ctx context.Context, p *Principal, action string) (bool, error) {
	if p.Kind != core.PrincipalOAuthApp || p.Key != nil || p.Refusal != nil || action == "" {
		return false, nil
	}
	d, err := s.authz.Decide(ctx, p.PolicyInput(action))
	if err != nil {
		return false, PolicyFailure(err)
	}
	return !d.Allow && d.Code == core.CodeInsufficientScope, nil
}
