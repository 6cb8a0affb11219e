package oauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/conclavehq/conclave/core"
	coreoauth "github.com/conclavehq/conclave/core/oauth"
)

// Store is what the authorization server keeps in PostgreSQL
// (internal/pgstore implements it): registered clients, the signing key,
// authorization requests, grants and refresh tokens. Codes and refresh
// tokens cross it only as their SHA-256.
type Store interface {
	coreoauth.ClientStore
	coreoauth.GrantStore
	KeyStore
	// TouchClient records a registered client's use.
	TouchClient(ctx context.Context, id string) error
	CreateAuthRequest(ctx context.Context, r *coreoauth.AuthRequest) error
	// AuthRequest finds an unexpired request; core.ErrNotFound otherwise.
	AuthRequest(ctx context.Context, id string) (*coreoauth.AuthRequest, error)
	// SetAuthCode records a consented request's one code.
	SetAuthCode(ctx context.Context, id string, codeHash []byte) error
	// TakeAuthCode returns and deletes the request of a code.
	TakeAuthCode(ctx context.Context, codeHash []byte) (*coreoauth.AuthRequest, error)
	DeleteAuthRequest(ctx context.Context, id string) error
	// ApproveAuthRequest writes the grant, marks the request done, audits.
	ApproveAuthRequest(ctx context.Context, id string, g *coreoauth.Grant) (*coreoauth.Grant, error)
	// RevokeReusedGrant revokes a grant whose refresh token was reused.
	RevokeReusedGrant(ctx context.Context, orgID, id string) (*coreoauth.Grant, error)
	TouchGrant(ctx context.Context, id string) error
	IssueRefreshToken(ctx context.Context, grantID string, hash []byte, expires time.Time) error
	RefreshToken(ctx context.Context, hash []byte) (*coreoauth.RefreshToken, *coreoauth.Grant, error)
	// RotateRefreshToken replaces a live token; coreoauth.ErrRefreshReused
	// when it is not live.
	RotateRefreshToken(ctx context.Context, oldHash, newHash []byte, expires time.Time) error
}

// sum is the SHA-256 a code or a refresh token is stored as.
func sum(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// refreshPrefix starts every refresh token, so that one is recognised in a
// leak or a log.
const refreshPrefix = "cclrt_"

func newRefreshToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return refreshPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// storage is zitadel's op.Storage over Store: clients come from their
// metadata documents (CIMD) or the registrations (DCR), tokens are JWTs
// signed with the issuer's key, refresh tokens opaque and rotated.
type storage struct {
	srv *Server
}

// client is a connected app as zitadel's op.Client: always public (PKCE,
// no secret), authorization code and refresh token only.
//
// Redirect URIs are matched by Server.authorize with
// coreoauth.MatchRedirect (exact, except a loopback URI's port and host),
// not by zitadel's ValidateAuthReqRedirectURI, which is never called: the
// token endpoint then compares the redirect_uri sent with the one the
// request used, byte for byte.
type client struct {
	id string
	coreoauth.Client
	// verified is true for a client known by its metadata document.
	verified bool
	login    string
}

func (c *client) GetID() string                    { return c.id }
func (c *client) RedirectURIs() []string           { return c.Client.RedirectURIs }
func (c *client) PostLogoutRedirectURIs() []string { return nil }
func (c *client) ApplicationType() op.ApplicationType {
	if c.Native {
		return op.ApplicationTypeNative
	}
	return op.ApplicationTypeWeb
}
func (c *client) AuthMethod() oidc.AuthMethod { return oidc.AuthMethodNone }
func (c *client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *client) LoginURL(id string) string                                { return c.login + "?id=" + url.QueryEscape(id) }
func (c *client) AccessTokenType() op.AccessTokenType                      { return op.AccessTokenTypeJWT }
func (c *client) IDTokenLifetime() time.Duration                           { return time.Minute }
func (c *client) DevMode() bool                                            { return false }
func (c *client) IDTokenUserinfoClaimsAssertion() bool                     { return false }
func (c *client) ClockSkew() time.Duration                                 { return 0 }
func (c *client) IsScopeAllowed(scope string) bool                         { return slices.Contains(supportedScopes, scope) }
func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string { return keepScopes }
func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return keepScopes
}

func keepScopes(s []string) []string { return s }

// GrantTypes are authorization_code, and refresh_token unless the client
// registered without it.
func (c *client) GrantTypes() []oidc.GrantType {
	out := []oidc.GrantType{oidc.GrantTypeCode}
	if len(c.Client.GrantTypes) == 0 || slices.Contains(c.Client.GrantTypes, string(oidc.GrantTypeRefreshToken)) {
		out = append(out, oidc.GrantTypeRefreshToken)
	}
	return out
}

// name is how the consent page and the audit trail call the app.
func (c *client) name() string {
	if c.ClientName != "" {
		return c.ClientName
	}
	if c.verified {
		return c.host()
	}
	return ""
}

// host is a metadata document's host, the identity a verified app has.
func (c *client) host() string {
	u, err := url.Parse(c.id)
	if err != nil {
		return ""
	}
	return u.Host
}

// Errors resolving a client.
var (
	// errUnknownClient: no such registration, or a document refused.
	errUnknownClient = errors.New("unknown client")
	// errClientUnavailable: the registrations could not be read.
	errClientUnavailable = errors.New("the client could not be looked up")
)

// clientByID resolves a client_id: an https URL through its metadata
// document, anything else through the registrations (touching its last
// use).
func (s *storage) clientByID(ctx context.Context, id string) (*client, error) {
	if strings.HasPrefix(id, "https://") {
		c, err := s.srv.fetcher.Client(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errUnknownClient, err)
		}
		return &client{id: id, Client: *c, verified: true, login: s.srv.consentURL}, nil
	}
	rc, err := s.srv.store.RegisteredClient(ctx, id)
	switch {
	case errors.Is(err, core.ErrNotFound):
		return nil, fmt.Errorf("%w: no app is registered as %q (registrations unused for %s are deleted)", errUnknownClient, id,
			s.srv.cfg.ClientRetention)
	case err != nil:
		return nil, fmt.Errorf("%w: %w", errClientUnavailable, err)
	}
	if err := s.srv.store.TouchClient(ctx, id); err != nil {
		s.srv.log.Warn("recording a client's use", slog.String("client_id", id), slog.String("error", err.Error()))
	}
	return &client{id: id, Client: rc.Client, login: s.srv.consentURL}, nil
}

// GetClientByClientID implements op.OPStorage: an unknown or refused
// client is invalid_client with its reason, a store failure server_error.
func (s *storage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.clientByID(ctx, id)
	if errors.Is(err, errUnknownClient) {
		return nil, oidc.ErrInvalidClient().WithDescription("%s", clientProblem(err)).WithParent(err)
	}
	if err != nil {
		return nil, oidc.ErrServerError().WithParent(err)
	}
	return c, nil
}

// clientProblem is the reason a client was refused, for the person or
// the app to read.
func clientProblem(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, errUnknownClient.Error()+": ")
	msg = strings.TrimPrefix(msg, ErrClientDocument.Error()+": ")
	if errors.Is(err, ErrClientDocument) {
		return "The app's client metadata document was refused: " + msg + "."
	}
	return "The app is not known: " + msg + "."
}

// AuthorizeClientIDSecret implements op.OPStorage: every client is public.
func (s *storage) AuthorizeClientIDSecret(context.Context, string, string) error {
	return oidc.ErrInvalidClient().WithDescription("Only public clients are served: send no client secret.")
}

// authRequest is a stored request as zitadel's op.AuthRequest.
type authRequest struct{ *coreoauth.AuthRequest }

func (a authRequest) GetID() string          { return a.ID }
func (a authRequest) GetACR() string         { return "" }
func (a authRequest) GetAMR() []string       { return nil }
func (a authRequest) GetAudience() []string  { return []string{a.Resource} }
func (a authRequest) GetAuthTime() time.Time { return a.CreatedAt }
func (a authRequest) GetClientID() string    { return a.ClientID }
func (a authRequest) GetCodeChallenge() *oidc.CodeChallenge {
	return &oidc.CodeChallenge{Challenge: a.CodeChallenge, Method: oidc.CodeChallengeMethodS256}
}
func (a authRequest) GetNonce() string                   { return a.Nonce }
func (a authRequest) GetRedirectURI() string             { return a.RedirectURI }
func (a authRequest) GetResponseType() oidc.ResponseType { return oidc.ResponseTypeCode }
func (a authRequest) GetResponseMode() oidc.ResponseMode { return oidc.ResponseModeQuery }
func (a authRequest) GetScopes() []string                { return a.Scopes }
func (a authRequest) GetState() string                   { return a.State }
func (a authRequest) GetSubject() string                 { return a.PersonID }
func (a authRequest) Done() bool                         { return a.AuthRequest.Done }

// refreshRequest is a refresh token's grant as zitadel's
// op.RefreshTokenRequest. Its audience is the grant's resource: a refresh
// without resource keeps it.
type refreshRequest struct {
	grant  *coreoauth.Grant
	scopes []string
}

func (r *refreshRequest) GetAMR() []string            { return nil }
func (r *refreshRequest) GetAudience() []string       { return []string{r.grant.Resource} }
func (r *refreshRequest) GetAuthTime() time.Time      { return r.grant.CreatedAt }
func (r *refreshRequest) GetClientID() string         { return r.grant.ClientID }
func (r *refreshRequest) GetScopes() []string         { return r.scopes }
func (r *refreshRequest) GetSubject() string          { return r.grant.PersonID }
func (r *refreshRequest) SetCurrentScopes(s []string) { r.scopes = s }

// CreateAuthRequest implements op.AuthStorage. Server.authorize creates
// requests itself (zitadel's Authorize is not used); this is never called.
func (s *storage) CreateAuthRequest(context.Context, *oidc.AuthRequest, string) (op.AuthRequest, error) {
	return nil, oidc.ErrServerError().WithDescription("authorization requests are created by /authorize")
}

// AuthRequestByID implements op.AuthStorage.
func (s *storage) AuthRequestByID(ctx context.Context, id string) (op.AuthRequest, error) {
	r, err := s.srv.store.AuthRequest(ctx, id)
	if err != nil {
		return nil, err
	}
	return authRequest{r}, nil
}

// AuthRequestByCode implements op.AuthStorage: the code is taken, so a
// second exchange of it finds nothing.
func (s *storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	r, err := s.srv.store.TakeAuthCode(ctx, sum(code))
	if errors.Is(err, core.ErrNotFound) {
		note(ctx, "The authorization code is not valid: it expired, was already used, or the access was revoked. Sign in again.")
	}
	if err != nil {
		return nil, err
	}
	return authRequest{r}, nil
}

// SaveAuthCode implements op.AuthStorage.
func (s *storage) SaveAuthCode(ctx context.Context, id, code string) error {
	return s.srv.store.SetAuthCode(ctx, id, sum(code))
}

// DeleteAuthRequest implements op.AuthStorage.
func (s *storage) DeleteAuthRequest(ctx context.Context, id string) error {
	return s.srv.store.DeleteAuthRequest(ctx, id)
}

// grantOf is the grant a token request is under.
func grantOf(r op.TokenRequest) (id string, ok bool) {
	switch r := r.(type) {
	case authRequest:
		return r.GrantID, true
	case *refreshRequest:
		return r.grant.ID, true
	}
	return "", false
}

// CreateAccessToken implements op.AuthStorage: an access token alone (no
// offline_access). The token is a JWT, not stored: its id is random.
func (s *storage) CreateAccessToken(ctx context.Context, r op.TokenRequest) (string, time.Time, error) {
	id, ok := grantOf(r)
	if !ok {
		return "", time.Time{}, oidc.ErrUnsupportedGrantType()
	}
	if err := s.srv.store.TouchGrant(ctx, id); err != nil {
		return "", time.Time{}, oidc.ErrServerError().WithParent(err)
	}
	return core.NewID("at"), s.srv.now().Add(s.srv.cfg.AccessTokenTTL), nil
}

// CreateAccessAndRefreshTokens implements op.AuthStorage: at a code's
// exchange (offline_access asked) a first refresh token; at a refresh, the
// rotation of the one presented. A token presented after its rotation
// revokes the grant.
func (s *storage) CreateAccessAndRefreshTokens(ctx context.Context, r op.TokenRequest, current string,
) (string, string, time.Time, error) {
	fresh := newRefreshToken()
	expires := s.srv.now().Add(s.srv.cfg.RefreshTokenTTL)
	switch r := r.(type) {
	case authRequest:
		if err := s.srv.store.IssueRefreshToken(ctx, r.GrantID, sum(fresh), expires); err != nil {
			if errors.Is(err, core.ErrNotFound) {
				return "", "", time.Time{}, oidc.ErrInvalidGrant().WithDescription("The app's access was revoked. Sign in again.")
			}
			return "", "", time.Time{}, oidc.ErrServerError().WithParent(err)
		}
		if err := s.srv.store.TouchGrant(ctx, r.GrantID); err != nil {
			return "", "", time.Time{}, oidc.ErrServerError().WithParent(err)
		}
	case *refreshRequest:
		err := s.srv.store.RotateRefreshToken(ctx, sum(current), sum(fresh), expires)
		if errors.Is(err, coreoauth.ErrRefreshReused) {
			return "", "", time.Time{}, s.reused(ctx, r.grant)
		}
		if err != nil {
			return "", "", time.Time{}, oidc.ErrServerError().WithParent(err)
		}
	default:
		return "", "", time.Time{}, oidc.ErrUnsupportedGrantType()
	}
	return core.NewID("at"), fresh, s.srv.now().Add(s.srv.cfg.AccessTokenTTL), nil
}

// reused revokes a grant whose refresh token came back after its
// rotation: the app or a thief holds a stale copy, and the grant cannot
// tell which.
func (s *storage) reused(ctx context.Context, g *coreoauth.Grant) error {
	ctx = core.WithActor(ctx, core.Actor{Kind: core.ActorSystem})
	if _, err := s.srv.store.RevokeReusedGrant(ctx, g.OrgID, g.ID); err != nil {
		return oidc.ErrServerError().WithParent(err)
	}
	s.srv.log.Warn("a refresh token was used twice: its grant is revoked", slog.String("grant_id", g.ID),
		slog.String("client_id", g.ClientID))
	const msg = "This refresh token was already used, so the app's access is revoked. Sign in again."
	note(ctx, msg)
	return oidc.ErrInvalidGrant().WithDescription(msg)
}

// TokenRequestByRefreshToken implements op.AuthStorage: the grant of a
// live refresh token. A used one revokes the grant.
func (s *storage) TokenRequestByRefreshToken(ctx context.Context, token string) (op.RefreshTokenRequest, error) {
	t, g, err := s.srv.store.RefreshToken(ctx, sum(token))
	switch {
	case errors.Is(err, core.ErrNotFound):
		note(ctx, "The refresh token is not valid: it is unknown, or the app's access was revoked. Sign in again.")
		return nil, err
	case err != nil:
		return nil, oidc.ErrServerError().WithParent(err)
	case g.Revoked():
		note(ctx, "The app's access was revoked. Sign in again.")
		return nil, errors.New("grant revoked")
	case !t.UsedAt.IsZero():
		return nil, s.reused(ctx, g)
	case !s.srv.now().Before(t.ExpiresAt):
		note(ctx, "The refresh token expired. Sign in again.")
		return nil, errors.New("refresh token expired")
	}
	return &refreshRequest{grant: g, scopes: slices.Clone(g.Scopes)}, nil
}

// TerminateSession implements op.AuthStorage: there is no end-session
// endpoint.
func (s *storage) TerminateSession(context.Context, string, string) error { return nil }

// GetRefreshTokenInfo implements op.AuthStorage, for /revoke: a refresh
// token's grant.
func (s *storage) GetRefreshTokenInfo(ctx context.Context, _, token string) (string, string, error) {
	_, g, err := s.srv.store.RefreshToken(ctx, sum(token))
	if errors.Is(err, core.ErrNotFound) {
		return "", "", op.ErrInvalidRefreshToken
	}
	if err != nil {
		return "", "", err
	}
	return g.PersonID, g.ID, nil
}

// RevokeToken implements op.AuthStorage, for /revoke: a refresh token
// (GetRefreshTokenInfo turned it into its grant id) revokes its grant, as
// the person the app acts for. Access tokens are handled by
// Server.revoke before zitadel sees them; anything else is ignored, as
// RFC 7009 asks for a token that is not valid.
func (s *storage) RevokeToken(ctx context.Context, grantID, personID, clientID string) *oidc.Error {
	if personID == "" {
		return nil
	}
	g, err := s.srv.store.Grant(ctx, grantID)
	if errors.Is(err, core.ErrNotFound) {
		return nil
	}
	if err != nil {
		return oidc.ErrServerError().WithParent(err)
	}
	return s.srv.revokeFor(ctx, g, clientID)
}

// SigningKey implements op.AuthStorage.
func (s *storage) SigningKey(context.Context) (op.SigningKey, error) { return s.srv.signer, nil }

// SignatureAlgorithms implements op.AuthStorage.
func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{signingAlg}, nil
}

// KeySet implements op.AuthStorage: every key that may verify a live
// token (/jwks).
func (s *storage) KeySet(ctx context.Context) ([]op.Key, error) {
	keys, err := s.srv.keys.all(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]op.Key, len(keys))
	for i, k := range keys {
		out[i] = &publicKey{jwk: k}
	}
	return out, nil
}

// SetUserinfoFromScopes implements op.OPStorage: no user info is served.
func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}

// SetUserinfoFromToken implements op.OPStorage: no userinfo endpoint.
func (s *storage) SetUserinfoFromToken(context.Context, *oidc.UserInfo, string, string, string) error {
	return errors.New("no userinfo endpoint")
}

// SetIntrospectionFromToken implements op.OPStorage: no introspection
// endpoint.
func (s *storage) SetIntrospectionFromToken(context.Context, *oidc.IntrospectionResponse, string, string, string) error {
	return errors.New("no introspection endpoint")
}

// GetPrivateClaimsFromScopes implements op.OPStorage; the claims come
// from GetPrivateClaimsFromRequest.
func (s *storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}

// GetPrivateClaimsFromRequest implements op.CanGetPrivateClaimsFromRequest:
// an access token's claims besides the registered ones — its scopes
// (offline_access left out: it is not a scope of /mcp), organisation and
// grant.
func (s *storage) GetPrivateClaimsFromRequest(_ context.Context, r op.TokenRequest, _ []string) (map[string]any, error) {
	var org, grant string
	switch r := r.(type) {
	case authRequest:
		org, grant = r.OrgID, r.GrantID
	case *refreshRequest:
		org, grant = r.grant.OrgID, r.grant.ID
	default:
		return nil, oidc.ErrUnsupportedGrantType()
	}
	return map[string]any{
		coreoauth.ClaimScope: strings.Join(tokenScopes(r.GetScopes()), " "),
		coreoauth.ClaimOrg:   org,
		coreoauth.ClaimGrant: grant,
	}, nil
}

// tokenScopes are the scopes an access token carries: offline_access
// left out.
func tokenScopes(s []string) []string {
	return slices.DeleteFunc(slices.Clone(s), func(x string) bool { return x == coreoauth.ScopeOffline })
}

// GetKeyByIDAndClientID implements op.OPStorage: no JWT client
// authentication.
func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errors.New("no client authenticates with a key")
}

// ValidateJWTProfileScopes implements op.OPStorage: no JWT profile grant.
func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errors.New("the JWT profile grant is not served")
}

// Health implements op.Storage.
func (s *storage) Health(context.Context) error { return nil }

var (
	_ op.Storage                        = (*storage)(nil)
	_ op.CanGetPrivateClaimsFromRequest = (*storage)(nil)
	_ op.Client                         = (*client)(nil)
	_ op.AuthRequest                    = authRequest{}
	_ op.RefreshTokenRequest            = (*refreshRequest)(nil)
	_ op.SigningKey                     = (*signer)(nil)
	_ op.Key                            = (*publicKey)(nil)
)
