package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/carrier"
	coreoauth "github.com/conclavehq/conclave/core/oauth"
)

// Paths the authorization server answers at the issuer's root (PEOPLE.md's
// URL map; claude.ai falls back to exactly these when discovery fails).
const (
	PathAuthorize = "/authorize"
	PathCallback  = "/authorize/callback"
	PathToken     = "/token"
	PathRegister  = "/register"
	PathRevoke    = "/revoke"
	PathJWKS      = "/jwks"
	// PathMetadata is RFC 8414's document; PathOpenIDMetadata the same
	// document where OpenID Connect discovery looks. Clients try both.
	PathMetadata       = "/.well-known/oauth-authorization-server"
	PathOpenIDMetadata = "/.well-known/openid-configuration"
)

// Paths lists every path the Server answers.
var Paths = []string{PathAuthorize, PathCallback, PathToken, PathRegister, PathRevoke, PathJWKS, PathMetadata,
	PathOpenIDMetadata}

// supportedScopes are the scopes a client may ask for: the keys' scopes,
// and offline_access for a refresh token.
var supportedScopes = slices.Concat(core.AllScopes, []string{coreoauth.ScopeOffline})

// maxForm caps the body of a form the server reads.
const maxForm = 64 << 10

// Config configures the authorization server. Zero fields take their
// defaults.
type Config struct {
	// Issuer is the one origin (server.public_url without a trailing
	// slash): every token's iss, the discovery documents' issuer, and the
	// protected-resource document's authorization_servers[0], byte for
	// byte. Required.
	Issuer string
	// Resource is the only resource tokens are issued for (RFC 8707), and
	// their audience. Defaults to Issuer + "/mcp".
	Resource string
	// ConsentPath is the consent page's path on the issuer; the pages
	// serve it. Defaults to "/oauth/consent".
	ConsentPath string
	// AccessTokenTTL is an access token's life, at most 15 minutes.
	// Defaults to coreoauth.AccessTokenTTL (10 minutes).
	AccessTokenTTL time.Duration
	// RefreshTokenTTL is how long an unused refresh token lives. Defaults
	// to coreoauth.RefreshTokenTTL (30 days).
	RefreshTokenTTL time.Duration
	// AuthRequestTTL is how long an authorization request waits for
	// consent and its code's exchange. Defaults to
	// coreoauth.AuthRequestTTL (10 minutes).
	AuthRequestTTL time.Duration
	// ClientRetention is how long an unused registered client is kept (the
	// sweep job deletes it; here only to say so). Defaults to 720h.
	ClientRetention time.Duration
	// TrustedProxies decide the client address (core/carrier). Defaults
	// to none.
	TrustedProxies []netip.Prefix
	// Fetcher configures the fetching of client metadata documents.
	Fetcher FetcherConfig
	// Registrar configures dynamic client registration; its
	// TrustedProxies default to the Server's.
	Registrar RegistrarConfig
	// Logger defaults to a logger that discards.
	Logger *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
}

// WithDefaults returns c with every unset field at its default.
func (c Config) WithDefaults() Config {
	set := func(d *time.Duration, def time.Duration) {
		if *d == 0 {
			*d = def
		}
	}
	c.Issuer = strings.TrimRight(c.Issuer, "/")
	if c.Resource == "" {
		c.Resource = c.Issuer + "/mcp"
	}
	if c.ConsentPath == "" {
		c.ConsentPath = "/oauth/consent"
	}
	set(&c.AccessTokenTTL, coreoauth.AccessTokenTTL)
	set(&c.RefreshTokenTTL, coreoauth.RefreshTokenTTL)
	set(&c.AuthRequestTTL, coreoauth.AuthRequestTTL)
	set(&c.ClientRetention, 720*time.Hour)
	if c.Registrar.TrustedProxies == nil {
		c.Registrar.TrustedProxies = c.TrustedProxies
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c *Config) validate() error {
	u, err := url.Parse(c.Issuer)
	switch {
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		return fmt.Errorf("oauth: Issuer %q is not an http(s) origin", c.Issuer)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return fmt.Errorf("oauth: Issuer %q may carry no query, fragment or user", c.Issuer)
	case c.AccessTokenTTL < time.Minute || c.AccessTokenTTL > 15*time.Minute:
		return errors.New("oauth: AccessTokenTTL must be between 1m and 15m")
	case c.RefreshTokenTTL < time.Hour:
		return errors.New("oauth: RefreshTokenTTL must be at least 1h")
	case c.AuthRequestTTL < time.Minute:
		return errors.New("oauth: AuthRequestTTL must be at least 1m")
	case !strings.HasPrefix(c.ConsentPath, "/"):
		return errors.New("oauth: ConsentPath must be a path")
	}
	return nil
}

// Deps are what the Server works on.
type Deps struct {
	// Store keeps clients, keys, requests, grants and refresh tokens.
	// Required.
	Store Store
	// Limiter budgets registrations per client address. Required.
	Limiter Limiter
}

// Server is the embedded OAuth 2.1 authorization server: zitadel's
// op.Provider for the token, revocation and key endpoints, around it what
// the provider lacks (see ../shared/design/OAUTH.md) — /authorize and its
// callback written here (exact redirect matching but for the loopback
// port, PKCE S256 only, RFC 8707 resource, iss on every authorization
// response, errors that must not redirect shown as a page), the trimmed
// discovery documents, registration, the consent decisions the pages ask
// for, and the access token Verifier. Safe for concurrent use.
type Server struct {
	cfg        Config
	issuer     string
	resource   string
	consentURL string
	store      Store
	fetcher    *Fetcher
	registrar  *Registrar
	provider   *op.Provider
	storage    *storage
	signer     *signer
	keys       *keyCache
	verifier   *Verifier
	log        *slog.Logger
	now        func() time.Time
	metadata   []byte
	oidcMeta   []byte
	handler    http.Handler
}

// New returns the Server, reading the issuer's signing key from the store
// (creating it on the first start of the first replica).
func New(ctx context.Context, cfg Config, d Deps) (*Server, error) {
	if d.Store == nil || d.Limiter == nil {
		return nil, errors.New("oauth: Store and Limiter are required")
	}
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	sig, err := loadSigner(ctx, d.Store)
	if err != nil {
		return nil, err
	}
	key, err := codeKey(sig)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, issuer: cfg.Issuer, resource: cfg.Resource, consentURL: cfg.Issuer + cfg.ConsentPath,
		store: d.Store, fetcher: NewFetcher(cfg.Fetcher), registrar: NewRegistrar(cfg.Registrar, d.Store, d.Limiter),
		signer: sig, keys: newKeyCache(storeKeys(d.Store), 5*time.Second), log: cfg.Logger, now: cfg.Now}
	s.storage = &storage{srv: s}
	opts := []op.Option{
		op.WithCORSOptions(nil), // CORS is ours (CORS), on the paths that need it
		op.WithCustomAuthEndpoint(op.NewEndpoint(strings.TrimPrefix(PathAuthorize, "/"))),
		op.WithCustomTokenEndpoint(op.NewEndpoint(strings.TrimPrefix(PathToken, "/"))),
		op.WithCustomRevocationEndpoint(op.NewEndpoint(strings.TrimPrefix(PathRevoke, "/"))),
		op.WithCustomKeysEndpoint(op.NewEndpoint(strings.TrimPrefix(PathJWKS, "/"))),
		op.WithLogger(cfg.Logger), // zitadel's lines go where ours do, not to slog.Default
	}
	if strings.HasPrefix(s.issuer, "http://") {
		opts = append(opts, op.WithAllowInsecure()) // http://localhost:PORT, the default origin
	}
	s.provider, err = op.NewProvider(&op.Config{CryptoKey: key, CryptoKeyId: sig.id, CodeMethodS256: true,
		GrantTypeRefreshToken: true, SupportedScopes: supportedScopes}, s.storage, op.StaticIssuer(s.issuer), opts...)
	if err != nil {
		return nil, fmt.Errorf("oauth: %w", err)
	}
	s.verifier = &Verifier{issuer: s.issuer, audience: s.resource, keys: s.keys, algs: []string{string(signingAlg)},
		now: s.now, own: true}
	if s.metadata, err = json.Marshal(s.serverMetadata(false)); err != nil {
		return nil, err
	}
	if s.oidcMeta, err = json.Marshal(s.serverMetadata(true)); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc(PathAuthorize, s.authorize)
	mux.HandleFunc(PathCallback, s.callback)
	mux.Handle(PathToken, CORS(http.HandlerFunc(s.token)))
	mux.Handle(PathRevoke, CORS(http.HandlerFunc(s.revoke)))
	mux.Handle(PathRegister, CORS(s.registrar))
	mux.Handle(PathJWKS, s.provider)
	mux.Handle(PathMetadata, CORS(s.serveMetadata(s.metadata)))
	mux.Handle(PathOpenIDMetadata, CORS(s.serveMetadata(s.oidcMeta)))
	s.handler = mux
	return s, nil
}

// ServeHTTP serves the authorization server's paths (Paths).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Verifier verifies the access tokens this server issues.
func (s *Server) Verifier() *Verifier { return s.verifier }

// Issuer is the server's issuer.
func (s *Server) Issuer() string { return s.issuer }

// --- Discovery ----------------------------------------------------------------

// metadata is the authorization server's metadata (RFC 8414), trimmed to
// what is served; the OpenID form adds the fields OpenID Connect discovery
// requires.
type metadata struct {
	Issuer                                     string   `json:"issuer"`
	AuthorizationEndpoint                      string   `json:"authorization_endpoint"`
	TokenEndpoint                              string   `json:"token_endpoint"`
	RegistrationEndpoint                       string   `json:"registration_endpoint"`
	RevocationEndpoint                         string   `json:"revocation_endpoint"`
	JWKSURI                                    string   `json:"jwks_uri"`
	ScopesSupported                            []string `json:"scopes_supported"`
	ResponseTypesSupported                     []string `json:"response_types_supported"`
	ResponseModesSupported                     []string `json:"response_modes_supported"`
	GrantTypesSupported                        []string `json:"grant_types_supported"`
	CodeChallengeMethodsSupported              []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported          []string `json:"token_endpoint_auth_methods_supported"`
	RevocationEndpointAuthMethodsSupported     []string `json:"revocation_endpoint_auth_methods_supported"`
	ClientIDMetadataDocumentSupported          bool     `json:"client_id_metadata_document_supported"`
	AuthorizationResponseIssParameterSupported bool     `json:"authorization_response_iss_parameter_supported"`
	// OpenID Connect discovery's required fields (its document only).
	SubjectTypesSupported            []string `json:"subject_types_supported,omitempty"`
	IDTokenSigningAlgValuesSupported []string `json:"id_token_signing_alg_values_supported,omitempty"`
}

func (s *Server) serverMetadata(openID bool) *metadata {
	m := &metadata{
		Issuer:                                 s.issuer,
		AuthorizationEndpoint:                  s.issuer + PathAuthorize,
		TokenEndpoint:                          s.issuer + PathToken,
		RegistrationEndpoint:                   s.issuer + PathRegister,
		RevocationEndpoint:                     s.issuer + PathRevoke,
		JWKSURI:                                s.issuer + PathJWKS,
		ScopesSupported:                        supportedScopes,
		ResponseTypesSupported:                 []string{"code"},
		ResponseModesSupported:                 []string{"query"},
		GrantTypesSupported:                    []string{"authorization_code", "refresh_token"},
		CodeChallengeMethodsSupported:          []string{"S256"},
		TokenEndpointAuthMethodsSupported:      []string{"none"},
		RevocationEndpointAuthMethodsSupported: []string{"none"},
		ClientIDMetadataDocumentSupported:      true,
		// iss is on every authorization response, success or error.
		AuthorizationResponseIssParameterSupported: true,
	}
	if openID {
		m.SubjectTypesSupported = []string{"public"}
		m.IDTokenSigningAlgValuesSupported = []string{string(signingAlg)}
	}
	return m
}

func (s *Server) serveMetadata(doc []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "Read the metadata with GET.")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=3600")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(doc)
		}
	})
}

// --- Authorization ------------------------------------------------------------

// authorize serves /authorize (RFC 6749 §4.1.1). A request whose client or
// redirect URI cannot be trusted is answered with a page, never a
// redirect; once both are, every error goes back to the app with its
// state and iss. A valid request is stored and the browser sent to the
// consent page (which signs the person in first when needed).
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, POST")
		s.errorPage(w, http.StatusMethodNotAllowed, "invalid_request", "Open this address with GET.")
		return
	}
	ctx := r.Context()
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	req, err := op.ParseAuthorizeRequest(r, s.provider.Decoder())
	if err != nil {
		s.errorPage(w, http.StatusBadRequest, "invalid_request", "The authorization request could not be read.")
		return
	}
	if req.ClientID == "" {
		s.errorPage(w, http.StatusBadRequest, "invalid_request", "The authorization request names no app (client_id is missing).")
		return
	}
	c, err := s.storage.clientByID(ctx, req.ClientID)
	switch {
	case errors.Is(err, errUnknownClient):
		s.errorPage(w, http.StatusBadRequest, "invalid_client", clientProblem(err))
		return
	case err != nil:
		s.log.Error("looking up a client", slog.String("error", err.Error()))
		s.errorPage(w, http.StatusServiceUnavailable, "temporarily_unavailable",
			"Conclave could not look the app up. Try again shortly.")
		return
	}
	if req.RedirectURI == "" {
		s.errorPage(w, http.StatusBadRequest, "invalid_request", "The authorization request names no redirect_uri.")
		return
	}
	if !coreoauth.MatchRedirect(c.Client.RedirectURIs, req.RedirectURI) {
		s.errorPage(w, http.StatusBadRequest, "invalid_request",
			"The address this request would send you back to is not one the app registered, so Conclave will not send you there.")
		return
	}
	// The client and the redirect URI are trusted: errors go back to the app.
	fail := func(code, description string) {
		http.Redirect(w, r, s.responseURL(req.RedirectURI, url.Values{"error": {code}, "error_description": {description},
			"state": nonEmpty(req.State)}), http.StatusFound)
	}
	scopes, msg := s.scopes(req.Scopes)
	switch {
	case req.RequestParam != "" || r.Form.Get("request_uri") != "":
		fail("request_not_supported", "Request objects are not supported: send the parameters themselves.")
	case req.ResponseType != oidc.ResponseTypeCode:
		fail("unsupported_response_type", "Only the authorization code flow is served: send response_type=code.")
	case req.ResponseMode != "" && req.ResponseMode != oidc.ResponseModeQuery:
		fail("invalid_request", "Only the query response mode is served.")
	case req.CodeChallenge == "":
		fail("invalid_request", "PKCE is required: send a code_challenge with code_challenge_method=S256.")
	case req.CodeChallengeMethod != oidc.CodeChallengeMethodS256:
		fail("invalid_request", "Only the S256 code_challenge_method is served; plain is refused.")
	case !validChallenge(req.CodeChallenge):
		fail("invalid_request", "The code_challenge is not a base64url SHA-256 (43 characters).")
	case len(req.State) > 2000 || len(req.Nonce) > 2000:
		fail("invalid_request", "The state or nonce is longer than 2000 characters.")
	case s.checkResource(r.Form["resource"]) != "":
		fail("invalid_target", s.checkResource(r.Form["resource"]))
	case msg != "":
		fail("invalid_scope", msg)
	case slices.Contains(req.Prompt, oidc.PromptNone):
		fail("consent_required", "Connecting an app needs the person's consent, so prompt=none cannot be served.")
	default:
		ar := &coreoauth.AuthRequest{ID: core.NewID("authreq"), ClientID: c.id, RedirectURI: req.RedirectURI, State: req.State,
			Nonce: req.Nonce, Scopes: scopes, CodeChallenge: req.CodeChallenge, Resource: s.resource,
			ExpiresAt: s.now().Add(s.cfg.AuthRequestTTL)}
		if err := s.store.CreateAuthRequest(ctx, ar); err != nil {
			s.log.Error("storing an authorization request", slog.String("error", err.Error()))
			fail("temporarily_unavailable", "Conclave could not start the sign-in. Try again shortly.")
			return
		}
		http.Redirect(w, r, c.LoginURL(ar.ID), http.StatusFound)
	}
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// validChallenge reports whether c is an S256 challenge: 43 base64url
// characters.
func validChallenge(c string) bool {
	if len(c) != 43 {
		return false
	}
	for i := 0; i < len(c); i++ {
		ch := c[i]
		if !(ch >= 'A' && ch <= 'Z' || ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_') {
			return false
		}
	}
	return true
}

// scopes are the scopes a request is served with: those asked for that
// Conclave serves, in a stable order (others are left out, as RFC 6749
// §3.3 allows); every key scope when none of them was asked for — asking
// for nothing, or for offline_access alone, asks for the default.
func (s *Server) scopes(asked []string) ([]string, string) {
	var out []string
	for _, sc := range supportedScopes {
		if slices.Contains(asked, sc) {
			out = append(out, sc)
		}
	}
	if !slices.ContainsFunc(out, func(sc string) bool { return sc != coreoauth.ScopeOffline }) {
		out = slices.Concat(core.AllScopes, out)
	}
	if len(asked) > 50 {
		return nil, "Too many scopes were asked for."
	}
	return out, ""
}

// checkResource says what is wrong with the resource parameters (RFC
// 8707), or "" when every one is the resource served (none is the same).
func (s *Server) checkResource(vals []string) string {
	for _, v := range vals {
		if v != s.resource {
			return "The resource asked for is not served here: the only resource is " + s.resource + "."
		}
	}
	return ""
}

// responseURL is an authorization response to redirectURI: params and the
// issuer (RFC 9207), added to the URI's own query.
func (s *Server) responseURL(redirectURI string, params url.Values) string {
	u, err := url.Parse(redirectURI)
	if err != nil {
		return redirectURI
	}
	q := u.Query()
	for k, vs := range params {
		for _, v := range vs {
			q.Add(k, descriptionSafe(v, k))
		}
	}
	q.Set("iss", s.issuer)
	u.RawQuery = q.Encode()
	return u.String()
}

// callback serves /authorize/callback, where the consent page sends an
// approved request: its one code goes back to the app, with state and iss.
func (s *Server) callback(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.URL.Query().Get("id")
	ar, err := s.store.AuthRequest(ctx, id)
	switch {
	case errors.Is(err, core.ErrNotFound):
		s.errorPage(w, http.StatusBadRequest, "invalid_request",
			"This sign-in request expired or was already used. Start connecting the app again from the app.")
		return
	case err != nil:
		s.log.Error("reading an authorization request", slog.String("error", err.Error()))
		s.errorPage(w, http.StatusServiceUnavailable, "temporarily_unavailable",
			"Conclave could not finish the sign-in. Try again shortly.")
		return
	case !ar.Done:
		http.Redirect(w, r, s.consentURL+"?id="+url.QueryEscape(id), http.StatusFound)
		return
	case ar.CodeIssued:
		s.errorPage(w, http.StatusBadRequest, "invalid_request",
			"This sign-in was already sent back to the app. Start connecting the app again from the app.")
		return
	}
	code, err := op.CreateAuthRequestCode(ctx, authRequest{ar}, s.storage, s.provider.Crypto())
	if errors.Is(err, core.ErrNotFound) {
		s.errorPage(w, http.StatusBadRequest, "invalid_request",
			"This sign-in was already sent back to the app. Start connecting the app again from the app.")
		return
	}
	if err != nil {
		s.log.Error("issuing an authorization code", slog.String("error", err.Error()))
		s.errorPage(w, http.StatusServiceUnavailable, "temporarily_unavailable",
			"Conclave could not finish the sign-in. Try again shortly.")
		return
	}
	back := s.responseURL(ar.RedirectURI, url.Values{"code": {code}, "state": nonEmpty(ar.State)})
	http.Redirect(w, r, back, http.StatusFound)
}

// --- Token and revocation -------------------------------------------------------

// tokenNote carries, through zitadel, why the storage refused a token
// request: zitadel answers some refusals without a description.
type tokenNote struct{ msg string }

type noteKey struct{}

func note(ctx context.Context, msg string) {
	if n, ok := ctx.Value(noteKey{}).(*tokenNote); ok && n.msg == "" {
		n.msg = msg
	}
}

// token serves /token: the checks zitadel does not make (the grant types
// served, RFC 8707 resource) before it, and its answer finished after it
// (see finish).
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "Send the token request as a POST.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "The token request's body could not be read as a form.")
		return
	}
	switch r.PostForm.Get("grant_type") {
	case string(oidc.GrantTypeCode), string(oidc.GrantTypeRefreshToken):
	case "":
		oauthError(w, http.StatusBadRequest, "invalid_request", "The grant_type is missing.")
		return
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", defaultDescriptions["unsupported_grant_type"])
		return
	}
	if msg := s.checkResource(r.Form["resource"]); msg != "" {
		oauthError(w, http.StatusBadRequest, "invalid_target", msg)
		return
	}
	n := &tokenNote{}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	s.provider.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), noteKey{}, n)))
	s.finish(w, rec, n, true)
}

// revoke serves /revoke (RFC 7009). Revoking either token revokes the
// app's grant: the app disconnects. An access token (a JWT) is handled
// here, since zitadel cannot tell its grant; a refresh token by zitadel
// through the storage. A token that is not valid is answered 200, as the
// RFC asks.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "Send the revocation request as a POST.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "The revocation request's body could not be read as a form.")
		return
	}
	tok := r.PostForm.Get("token")
	if tok == "" {
		oauthError(w, http.StatusBadRequest, "invalid_request", "The token to revoke is missing.")
		return
	}
	ctx := core.WithActor(r.Context(), core.Actor{Kind: core.ActorPerson,
		Address: carrier.ClientAddress(r, s.cfg.TrustedProxies)})
	if strings.Count(tok, ".") == 2 && r.PostForm.Get("token_type_hint") != "refresh_token" {
		t, err := s.verifier.VerifyToken(ctx, tok)
		if err != nil && core.AsError(err).Code == core.CodeOAuthUnavailable {
			oauthError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "The token could not be checked. Retry shortly.")
			return
		}
		if err == nil {
			g, err := s.store.Grant(ctx, t.GrantID)
			if err != nil && !errors.Is(err, core.ErrNotFound) {
				oauthError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "The token could not be revoked. Retry shortly.")
				return
			}
			if g != nil {
				if e := s.revokeFor(ctx, g, r.PostForm.Get("client_id")); e != nil {
					oauthError(w, revocationStatus(e), string(e.ErrorType), e.Description)
					return
				}
			}
		}
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		return
	}
	n := &tokenNote{}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	s.provider.ServeHTTP(rec, r.WithContext(context.WithValue(ctx, noteKey{}, n)))
	s.finish(w, rec, n, false)
}

func revocationStatus(e *oidc.Error) int {
	switch e.ErrorType {
	case oidc.ServerError:
		return http.StatusServiceUnavailable
	case oidc.InvalidClient:
		return http.StatusUnauthorized
	}
	return http.StatusBadRequest
}

// revokeFor revokes g on its app's request: the app must be the one the
// grant is for. The audit trail names the person the app acts for.
func (s *Server) revokeFor(ctx context.Context, g *coreoauth.Grant, clientID string) *oidc.Error {
	if clientID != g.ClientID {
		return oidc.ErrInvalidClient().WithDescription("The token was issued to another app: send the client_id it was issued to.")
	}
	if g.Revoked() {
		return nil
	}
	a := core.ActorOf(ctx)
	a.Kind, a.ID = core.ActorPerson, g.PersonID
	if _, err := s.store.RevokeGrant(core.WithActor(ctx, a), g.OrgID, g.ID); err != nil && !errors.Is(err, core.ErrNotFound) {
		return oidc.ErrServerError().WithParent(err)
	}
	return nil
}

// recorder keeps zitadel's answer so that finish can complete it.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(status int)      { r.status = status }

// defaultDescriptions are the descriptions of zitadel's refusals that come
// without one.
var defaultDescriptions = map[string]string{
	"invalid_grant": "The authorization code or refresh token is not valid: it expired, was already used, " +
		"or the app's access was revoked. Sign in again.",
	"invalid_client":         "The app is not known, or its registration could not be used.",
	"unauthorized_client":    "This app may not use this grant type.",
	"invalid_request":        "The request is missing a parameter or has one that is not valid.",
	"invalid_scope":          "The scope asked for is more than the app was granted.",
	"unsupported_grant_type": "Only the authorization_code and refresh_token grants are served.",
}

// finish writes zitadel's answer rec, completed: a success loses the
// id_token zitadel always adds (no OpenID scope is served, and the token
// is not for /mcp); an error gets a readable description — the storage's
// note, else one by its code — and a server error never shows its cause.
func (s *Server) finish(w http.ResponseWriter, rec *recorder, n *tokenNote, token bool) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	if rec.status < 400 {
		if !token {
			w.WriteHeader(http.StatusOK)
			return
		}
		var body map[string]json.RawMessage
		if err := json.Unmarshal(rec.body.Bytes(), &body); err != nil {
			s.log.Error("reading the token response", slog.String("error", err.Error()))
			oauthError(w, http.StatusInternalServerError, "server_error", "Something went wrong on our side. Retry shortly.")
			return
		}
		delete(body, "id_token")
		w.WriteHeader(rec.status)
		_ = json.NewEncoder(w).Encode(body)
		return
	}
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	_ = json.Unmarshal(rec.body.Bytes(), &e)
	switch {
	case e.Error == "" || e.Error == string(oidc.ServerError):
		s.log.Error("token endpoint failed", slog.Int("status", rec.status), slog.String("error", e.Description))
		oauthError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "Something went wrong on our side. Retry shortly.")
		return
	case n.msg != "":
		e.Description = n.msg
	case e.Description == "":
		e.Description = defaultDescriptions[e.Error]
	}
	oauthError(w, rec.status, e.Error, descriptionSafe(e.Description, "error_description"))
}

// descriptionSafe keeps an error_description within RFC 6749's characters
// (printable ASCII but the double quote and the backslash); other
// parameters are left as they are.
func descriptionSafe(v, param string) string {
	if param != "error_description" {
		return v
	}
	b := []byte(v)
	for i, c := range b {
		switch {
		case c == '"':
			b[i] = '\''
		case c == '\\' || c < 0x20 || c > 0x7e:
			b[i] = ' '
		}
	}
	return string(b)
}

// --- The page of errors that must not redirect -----------------------------------

var errorTmpl = template.Must(template.New("error").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>{{.Title}} · Conclave</title>
<link rel="stylesheet" href="/assets/site.css">
</head>
<body>
<header class="bar"><a class="brand" href="/">Conclave</a></header>
<main id="main" tabindex="-1">
<h1>{{.Title}}</h1>
<p>{{.Message}}</p>
<p>Nothing was shared with the app. You can close this window and return to the app.</p>
<p><small>Error: <code>{{.Code}}</code></small></p>
</main>
</body>
</html>
`))

// errorPage answers an authorization request that cannot go back to the
// app — its client or redirect URI untrusted — with a page for the person.
func (s *Server) errorPage(w http.ResponseWriter, status int, code, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; "+
		"frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	title := "This app cannot be connected"
	if status >= 500 {
		title = "Conclave is unavailable"
	}
	if err := errorTmpl.Execute(w, struct{ Title, Message, Code string }{title, msg, code}); err != nil {
		s.log.Warn("rendering the authorization error page", slog.String("error", err.Error()))
	}
}
