package access

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/expiring"
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
	PersonByEmail(ctx context.Context, email string) (*core.Person, error)
	Membership(ctx context.Context, personID, orgID string) (*core.Membership, error)
	Memberships(ctx context.Context, personID string) ([]*core.Membership, error)
	GetOrg(ctx context.Context, id string) (*core.Org, error)
}

// UseTokens makes AuthenticateBearer accept connected apps' access tokens
// beside API keys: a bearer secret that is not an API key is verified by v
// and its grant checked in grants, the answer reused for ttl (0: not
// reused; at most 30s): a revocation, or the person leaving the
// organisation, ends the app's calls within it.
func (s *Service) UseTokens(v TokenVerifier, grants GrantLookup, ttl time.Duration) error {
	if v == nil || grants == nil {
		return errors.New("access: UseTokens needs a verifier and a grant lookup")
	}
	if ttl < 0 || ttl > 30*time.Second {
		return errors.New("access: the grant cache TTL must be between 0 and 30s")
	}
	s.tokens, s.verified = v, newTokenCache()
	s.grants = &grantCache{lookup: grants, ttl: ttl, entries: expiring.New[string, grantState](maxGrantEntries)}
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
	t, err := s.verified.verify(ctx, s.tokens, token)
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
	lookup  GrantLookup
	ttl     time.Duration
	entries *expiring.Map[string, grantState]
}

// maxGrantEntries bounds the cache of grant checks.
const maxGrantEntries = 50_000

// state checks t's grant: standing, the token's person and organisation
// its own, the person still a member there.
func (c *grantCache) state(ctx context.Context, t *oauth.Token) (grantState, error) {
	if c.ttl == 0 {
		return c.check(ctx, t)
	}
	// Everything the check reads from the token: an external token is
	// matched by its issuer, sub, email and organisation.
	key := strings.Join([]string{t.GrantID, t.PersonID, t.OrgID, t.Issuer, t.Email}, "\x00")
	now := time.Now()
	if st, ok := c.entries.Get(key, now); ok {
		return st, nil
	}
	st, err := c.check(ctx, t)
	if err != nil {
		return st, err
	}
	c.entries.Put(key, st, now.Add(c.ttl), now)
	return st, nil
}

func (c *grantCache) check(ctx context.Context, t *oauth.Token) (grantState, error) {
	if t.External {
		return c.checkExternal(ctx, t)
	}
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
	return c.member(ctx, t.PersonID, t.OrgID)
}

// member finds the person and their role in the organisation.
func (c *grantCache) member(ctx context.Context, personID, orgID string) (grantState, error) {
	m, err := c.lookup.Membership(ctx, personID, orgID)
	switch {
	case errors.Is(err, core.ErrNotFound):
		return grantState{refusal: "The person who connected the app is no longer in the organisation."}, nil
	case err != nil:
		return grantState{}, err
	}
	person, err := c.lookup.GetPerson(ctx, personID)
	switch {
	case errors.Is(err, core.ErrNotFound):
		return grantState{refusal: "The person who connected the app no longer exists."}, nil
	case err != nil:
		return grantState{}, err
	}
	org, err := c.lookup.GetOrg(ctx, orgID)
	if err != nil {
		return grantState{}, err
	}
	return grantState{person: person, role: m.Role, org: org}, nil
}

// checkExternal finds the person another authorization server's token
// names: its sub as a person's id, else its email; and the organisation:
// its org_id claim, else the person's only one.
func (c *grantCache) checkExternal(ctx context.Context, t *oauth.Token) (grantState, error) {
	person, err := c.lookup.GetPerson(ctx, t.PersonID)
	if errors.Is(err, core.ErrNotFound) && t.Email != "" {
		person, err = c.lookup.PersonByEmail(ctx, t.Email)
	}
	switch {
	case errors.Is(err, core.ErrNotFound):
		return grantState{refusal: "The token names no person of this server."}, nil
	case err != nil:
		return grantState{}, err
	}
	orgID := t.OrgID
	if orgID == "" {
		ms, err := c.lookup.Memberships(ctx, person.ID)
		if err != nil {
			return grantState{}, err
		}
		if len(ms) != 1 {
			return grantState{refusal: "The token names no organisation, and its person is not in exactly one."}, nil
		}
		orgID = ms[0].OrgID
	}
	return c.member(ctx, person.ID, orgID)
}

// LacksScope reports whether p, a connected app, was granted no scope for
// action: the policy refuses it insufficient_scope before anything else
// about the request matters. Always false for other principals, whose
// refusals are answered where the action is taken. The answer depends on
// the action and the scopes alone (the scope rule needs no mode and
// outranks the role rule), and the policy is fixed for the process's life,
// so it is asked once per pair.
func (s *Service) LacksScope(ctx context.Context, p *Principal, action string) (bool, error) {
	if p.Kind != core.PrincipalOAuthApp || p.Key != nil || p.Refusal != nil || action == "" {
		return false, nil
	}
	key := action + "\x00" + strings.Join(p.Scopes, " ")
	if lacks, ok := s.lacks.Load(key); ok {
		return lacks.(bool), nil
	}
	d, err := s.decide(ctx, p.PolicyInput(action))
	if err != nil {
		return false, PolicyFailure(err)
	}
	lacks := !d.Allow && d.Code == core.CodeInsufficientScope
	s.lacks.Store(key, lacks)
	return lacks, nil
}

// tokenCache remembers the tokens that verified, by their SHA-256, until
// they expire: a verification is a function of the token's bytes and the
// issuer's keys, so a busy app's token is checked once (its signature
// costs tens of microseconds) and then only for expiry. Its grant is still
// checked on every use (grantCache). Safe for concurrent use.
type tokenCache struct {
	entries *expiring.Map[[sha256.Size]byte, *oauth.Token]
}

// maxVerifiedTokens bounds the cache of verified tokens.
const maxVerifiedTokens = 50_000

func newTokenCache() *tokenCache {
	return &tokenCache{entries: expiring.New[[sha256.Size]byte, *oauth.Token](maxVerifiedTokens)}
}

func (c *tokenCache) verify(ctx context.Context, v TokenVerifier, token string) (*oauth.Token, error) {
	sum := sha256.Sum256([]byte(token))
	now := time.Now()
	if t, ok := c.entries.Get(sum, now); ok {
		return t, nil
	}
	t, err := v.VerifyToken(ctx, token)
	if err != nil {
		return t, err
	}
	c.entries.Put(sum, t, t.Expires, now)
	return t, nil
}
