package oauth_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/api/oauth"
	"github.com/conclavehq/conclave/core"
	coreoauth "github.com/conclavehq/conclave/core/oauth"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

// asBundle is the authorization server on a loopback issuer over a real
// PostgreSQL, with an organisation and a member, and a metadata document
// server (docServer) whose documents tests set by path.
type asBundle struct {
	srv    *oauth.Server
	issuer string
	store  *pgstore.Store
	org    *core.Org
	person *core.Person
	// documents maps a path of client.example.com to its document.
	mu        sync.Mutex
	documents map[string]string
}

func newAS(t *testing.T) *asBundle {
	t.Helper()
	ctx := context.Background()
	b := &asBundle{store: pgstore.New(pgtest.NewPool(t)), documents: map[string]string{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b.issuer = "http://" + ln.Addr().String()
	b.srv, err = oauth.New(ctx, oauth.Config{Issuer: b.issuer, Fetcher: b.fetcherConfig(t)},
		oauth.Deps{Store: b.store, Limiter: b.store})
	require.NoError(t, err)
	hs := httptest.NewUnstartedServer(b.srv)
	hs.Listener.Close()
	hs.Listener = ln
	hs.Start()
	t.Cleanup(hs.Close)
	b.org, _, err = b.store.CreateOrg(ctx, &core.CreateOrgParams{Name: "Acme", Ticker: "ACME"})
	require.NoError(t, err)
	b.person, err = b.store.CreatePerson(ctx, &core.CreatePersonParams{Email: "mia@acme.example", Name: "Mia", OrgID: b.org.ID,
		Role: core.RoleMember})
	require.NoError(t, err)
	return b
}

// fetcherConfig serves the bundle's documents from a loopback TLS server
// (httptest's certificate names example.com and its subdomains) that the
// fetcher reaches through an injected resolver — client.example.com is
// 8.8.8.8 — and dialer, uncached.
func (b *asBundle) fetcherConfig(t *testing.T) oauth.FetcherConfig {
	docs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		d, ok := b.documents[r.URL.Path]
		b.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = io.WriteString(w, d)
	}))
	t.Cleanup(docs.Close)
	pool := x509.NewCertPool()
	pool.AddCert(docs.Certificate())
	return oauth.FetcherConfig{RootCAs: pool,
		LookupIP: func(_ context.Context, h string) ([]netip.Addr, error) {
			if h != host {
				return nil, fmt.Errorf("no such host %s", h)
			}
			return []netip.Addr{netip.MustParseAddr("8.8.8.8")}, nil
		},
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, docs.Listener.Addr().String())
		}}
}

// document publishes a metadata document at path and returns its URL.
func (b *asBundle) document(path, body string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	id := "https://" + host + path
	b.documents[path] = strings.ReplaceAll(body, "{id}", id)
	return id
}

// noRedirect is a client that returns redirects instead of following them.
var noRedirect = &http.Client{Timeout: 10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// pkce is a code verifier and its S256 challenge.
func pkce() (verifier, challenge string) {
	var b [32]byte
	_, _ = rand.Read(b[:])
	verifier = base64.RawURLEncoding.EncodeToString(b[:])
	h := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(h[:])
}

// registerClient registers a client by DCR and returns its id.
func (b *asBundle) registerClient(t *testing.T, body string) string {
	t.Helper()
	res, err := http.Post(b.issuer+oauth.PathRegister, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer res.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
	require.Equal(t, http.StatusCreated, res.StatusCode, out)
	return out["client_id"].(string)
}

// authorize sends the browser to /authorize with params and returns the
// answer (not followed).
func (b *asBundle) authorize(t *testing.T, params url.Values) *http.Response {
	t.Helper()
	res, err := noRedirect.Get(b.issuer + oauth.PathAuthorize + "?" + params.Encode())
	require.NoError(t, err)
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// redirected is where res redirects to, parsed.
func redirected(t *testing.T, res *http.Response) *url.URL {
	t.Helper()
	require.Equal(t, http.StatusFound, res.StatusCode)
	u, err := url.Parse(res.Header.Get("Location"))
	require.NoError(t, err)
	return u
}

// flow is one authorization: its client, redirect URI and PKCE verifier.
type flow struct {
	clientID, redirect, verifier, challenge string
	scope, resource                         string
}

func newFlow(clientID, redirect string) *flow {
	f := &flow{clientID: clientID, redirect: redirect}
	f.verifier, f.challenge = pkce()
	return f
}

func (f *flow) params() url.Values {
	v := url.Values{"response_type": {"code"}, "client_id": {f.clientID}, "redirect_uri": {f.redirect},
		"state": {"the-state"}, "code_challenge": {f.challenge}, "code_challenge_method": {"S256"}}
	if f.scope != "" {
		v.Set("scope", f.scope)
	}
	if f.resource != "" {
		v.Set("resource", f.resource)
	}
	return v
}

// code runs f through /authorize, the person's approval and the callback,
// and returns the code the app receives.
func (b *asBundle) code(t *testing.T, f *flow) string {
	t.Helper()
	consent := redirected(t, b.authorize(t, f.params()))
	require.Equal(t, "/oauth/consent", consent.Path)
	id := consent.Query().Get("id")
	ctx := core.WithActor(context.Background(), core.Actor{Kind: core.ActorPerson, ID: b.person.ID})
	callback, err := b.srv.Approve(ctx, id, b.person.ID, b.org.ID)
	require.NoError(t, err)
	res, err := noRedirect.Get(callback)
	require.NoError(t, err)
	defer res.Body.Close()
	back := redirected(t, res)
	got := back.Query()
	require.Equal(t, b.issuer, got.Get("iss"), "RFC 9207: iss on the response")
	require.Equal(t, "the-state", got.Get("state"))
	want, err := url.Parse(f.redirect)
	require.NoError(t, err)
	require.Equal(t, want.Scheme+want.Hostname()+want.Path, back.Scheme+back.Hostname()+back.Path, "back to the app")
	require.NotEmpty(t, got.Get("code"))
	return got.Get("code")
}

// token posts form to /token and returns the status and the body.
func (b *asBundle) token(t *testing.T, form url.Values) (int, map[string]any) {
	t.Helper()
	res, err := http.PostForm(b.issuer+oauth.PathToken, form)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, "no-store", res.Header.Get("Cache-Control"))
	out := map[string]any{}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
	return res.StatusCode, out
}

func (b *asBundle) exchange(t *testing.T, f *flow, code string) (int, map[string]any) {
	t.Helper()
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {f.redirect},
		"client_id": {f.clientID}, "code_verifier": {f.verifier}}
	if f.resource != "" {
		form.Set("resource", f.resource)
	}
	return b.token(t, form)
}

func (b *asBundle) refresh(t *testing.T, clientID, rt string, extra url.Values) (int, map[string]any) {
	t.Helper()
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {clientID}}
	for k, v := range extra {
		form[k] = v
	}
	return b.token(t, form)
}

// claimsOf decodes a JWT's claims without checking it.
func claimsOf(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	require.Len(t, parts, 3)
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	out := map[string]any{}
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}

const cursorBody = `{"client_name":"Cursor","redirect_uris":["cursor://anysphere.cursor-mcp/oauth/callback","https://www.cursor.com/agents/mcp/oauth/callback","http://localhost:8787/callback"],"grant_types":["authorization_code","refresh_token"],"response_types":["code"],"token_endpoint_auth_method":"none"}`

const vscodeBody = `{"client_name":"Visual Studio Code","redirect_uris":["https://vscode.dev/redirect","https://insiders.vscode.dev/redirect","http://127.0.0.1/","http://127.0.0.1:33418/"],"grant_types":["authorization_code","refresh_token"],"token_endpoint_auth_method":"none"}`

// Both discovery documents name the issuer byte for byte and advertise
// exactly what is served, to any origin.
func TestOAuthDiscoveryDocuments(t *testing.T) {
	t.Parallel()
	b := newAS(t)
	for _, path := range []string{oauth.PathMetadata, oauth.PathOpenIDMetadata} {
		req, err := http.NewRequest(http.MethodGet, b.issuer+path, nil)
		require.NoError(t, err)
		req.Header.Set("Origin", "https://claude.ai")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		raw, err := io.ReadAll(res.Body)
		res.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode, path)
		require.Equal(t, "*", res.Header.Get("Access-Control-Allow-Origin"), path)
		require.Empty(t, res.Header.Get("Access-Control-Allow-Credentials"))
		require.Contains(t, string(raw), `"issuer":"`+b.issuer+`"`, "the issuer, byte for byte")
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m))
		require.Equal(t, b.issuer+"/authorize", m["authorization_endpoint"])
		require.Equal(t, b.issuer+"/token", m["token_endpoint"])
		require.Equal(t, b.issuer+"/register", m["registration_endpoint"])
		require.Equal(t, b.issuer+"/revoke", m["revocation_endpoint"])
		require.Equal(t, b.issuer+"/jwks", m["jwks_uri"])
		require.Equal(t, []any{"code"}, m["response_types_supported"])
		require.Equal(t, []any{"authorization_code", "refresh_token"}, m["grant_types_supported"])
		require.Equal(t, []any{"S256"}, m["code_challenge_methods_supported"])
		require.Equal(t, []any{"none"}, m["token_endpoint_auth_methods_supported"])
		require.Equal(t, true, m["client_id_metadata_document_supported"])
		require.Equal(t, true, m["authorization_response_iss_parameter_supported"])
		want := []any{}
		for _, s := range append(append([]string{}, core.AllScopes...), coreoauth.ScopeOffline) {
			want = append(want, s)
		}
		require.Equal(t, want, m["scopes_supported"])
	}
	res, err := http.Get(b.issuer + oauth.PathJWKS)
	require.NoError(t, err)
	defer res.Body.Close()
	var set jose.JSONWebKeySet
	require.NoError(t, json.NewDecoder(res.Body).Decode(&set))
	require.Len(t, set.Keys, 1)
	require.True(t, set.Keys[0].IsPublic(), "only the public key is published")
	require.Equal(t, "RS256", set.Keys[0].Algorithm)
}

// A registered client (Cursor's real body) signs a person in: the code
// comes back with iss and state, once; the token is a short JWT for /mcp
// alone with the person, the organisation, the grant, the client and the
// scopes; a refresh token comes only with offline_access; resource may be
// omitted.
func TestOAuthCodeFlowIssuesTokensForMCP(t *testing.T) {
	t.Parallel()
	b := newAS(t)
	clientID := b.registerClient(t, cursorBody)
	f := newFlow(clientID, "http://127.0.0.1:51234/callback") // Cursor's loopback URI on another port and host
	f.scope = "deliberate models:read offline_access openid"
	code := b.code(t, f)
	status, tok := b.exchange(t, f, code)
	require.Equal(t, http.StatusOK, status, tok)
	require.NotContains(t, tok, "id_token", "no ID token: no OpenID scope is served")
	require.Equal(t, "Bearer", tok["token_type"])
	require.InDelta(t, coreoauth.AccessTokenTTL.Seconds(), tok["expires_in"], 5)
	rt, _ := tok["refresh_token"].(string)
	require.True(t, strings.HasPrefix(rt, "cclrt_"), rt)

	at := tok["access_token"].(string)
	c := claimsOf(t, at)
	require.Equal(t, b.issuer, c["iss"])
	require.Equal(t, []any{b.issuer + "/mcp"}, c["aud"], "the resource alone, not the client")
	require.Equal(t, b.person.ID, c["sub"])
	require.Equal(t, b.org.ID, c["org_id"])
	require.Equal(t, clientID, c["client_id"])
	require.Equal(t, "models:read deliberate", c["scope"], "the scopes served, offline_access left out")
	require.NotEmpty(t, c["grant_id"])
	require.LessOrEqual(t, c["exp"].(float64)-c["iat"].(float64), 15*60.0)

	got, err := b.srv.Verifier().VerifyToken(context.Background(), at)
	require.NoError(t, err)
	require.Equal(t, &coreoauth.Token{PersonID: b.person.ID, OrgID: b.org.ID, GrantID: c["grant_id"].(string), ClientID: clientID,
		Scopes: []string{"models:read", "deliberate"}, Expires: got.Expires, Issuer: b.issuer}, got)
	g, err := b.store.Grant(context.Background(), got.GrantID)
	require.NoError(t, err)
	require.Equal(t, "Cursor", g.ClientName)
	require.False(t, g.Verified, "registered itself")

	status, again := b.exchange(t, f, code)
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "invalid_grant", again["error"], "a code is exchanged once")
	require.NotEmpty(t, again["error_description"])

	// Without offline_access: no refresh token. No scope: every key scope.
	f2 := newFlow(clientID, "http://localhost:8787/callback")
	f2.resource = b.issuer + "/mcp"
	status, tok = b.exchange(t, f2, b.code(t, f2))
	require.Equal(t, http.StatusOK, status, tok)
	require.NotContains(t, tok, "refresh_token")
	require.Equal(t, strings.Join(core.AllScopes, " "), claimsOf(t, tok["access_token"].(string))["scope"])
}

// What must not redirect is a page; everything else goes back to the app
// with the RFC's error, its state and iss.
func TestOAuthAuthorizeRefusals(t *testing.T) {
	t.Parallel()
	b := newAS(t)
	clientID := b.registerClient(t, cursorBody)

	page := func(params url.Values, want string) {
		t.Helper()
		res := b.authorize(t, params)
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		require.Empty(t, res.Header.Get("Location"), "never redirected")
		require.Equal(t, "text/html; charset=utf-8", res.Header.Get("Content-Type"))
		body, _ := io.ReadAll(res.Body)
		require.Contains(t, string(body), want)
	}
	f := newFlow("client_unknown", "https://www.cursor.com/agents/mcp/oauth/callback")
	page(f.params(), "The app is not known")
	f = newFlow(clientID, "https://evil.example/callback")
	page(f.params(), "is not one the app registered")
	f = newFlow(b.document("/bad.json", `{"client_id":"https://elsewhere.example/x","redirect_uris":["https://a.example/cb"]}`),
		"https://a.example/cb")
	page(f.params(), "metadata document was refused")

	back := func(params url.Values, code, want string) {
		t.Helper()
		u := redirected(t, b.authorize(t, params))
		require.Equal(t, "www.cursor.com", u.Host)
		q := u.Query()
		require.Equal(t, code, q.Get("error"), q)
		require.Contains(t, q.Get("error_description"), want)
		require.Equal(t, "the-state", q.Get("state"))
		require.Equal(t, b.issuer, q.Get("iss"))
	}
	f = newFlow(clientID, "https://www.cursor.com/agents/mcp/oauth/callback")
	p := f.params()
	p.Set("code_challenge_method", "plain")
	back(p, "invalid_request", "plain is refused")
	p = f.params()
	p.Del("code_challenge")
	p.Del("code_challenge_method")
	back(p, "invalid_request", "PKCE is required")
	p = f.params()
	p.Set("resource", "https://other.example/mcp")
	back(p, "invalid_target", "the only resource is "+b.issuer+"/mcp")
	p = f.params()
	p.Set("response_type", "token")
	back(p, "unsupported_response_type", "authorization code")

	// At the token endpoint, a resource other than /mcp is invalid_target.
	f = newFlow(clientID, "https://www.cursor.com/agents/mcp/oauth/callback")
	code := b.code(t, f)
	f.resource = "https://other.example/mcp"
	status, out := b.exchange(t, f, code)
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "invalid_target", out["error"])
	// A wrong verifier.
	f.resource = ""
	f.verifier = strings.Repeat("x", 43)
	status, out = b.exchange(t, f, code)
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "invalid_grant", out["error"], out)
	// Unsupported grant types.
	status, out = b.token(t, url.Values{"grant_type": {"client_credentials"}, "client_id": {clientID}})
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "unsupported_grant_type", out["error"])
}

// Refresh tokens rotate on every use; a refresh without resource keeps the
// audience; the old one presented again revokes the grant, which ends its
// newest refresh token too; a grant revoked by a person ends its refresh.
func TestOAuthRefreshRotationAndReuse(t *testing.T) {
	t.Parallel()
	b := newAS(t)
	clientID := b.registerClient(t, vscodeBody)
	f := newFlow(clientID, "http://127.0.0.1:40411/") // VS Code's loopback URI on its random port
	f.scope = "deliberate offline_access"
	status, tok := b.exchange(t, f, b.code(t, f))
	require.Equal(t, http.StatusOK, status, tok)
	rt1 := tok["refresh_token"].(string)

	status, tok = b.refresh(t, clientID, rt1, nil)
	require.Equal(t, http.StatusOK, status, tok)
	rt2 := tok["refresh_token"].(string)
	require.NotEqual(t, rt1, rt2, "rotated")
	c := claimsOf(t, tok["access_token"].(string))
	require.Equal(t, []any{b.issuer + "/mcp"}, c["aud"], "a refresh without resource keeps the audience")
	require.Equal(t, "deliberate", c["scope"])

	status, tok = b.refresh(t, clientID, rt2, url.Values{"resource": {b.issuer + "/mcp"}})
	require.Equal(t, http.StatusOK, status, tok)
	rt3 := tok["refresh_token"].(string)
	status, out := b.refresh(t, clientID, rt3, url.Values{"resource": {"https://other.example/"}})
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "invalid_target", out["error"])

	// rt1 again: reuse. The grant is revoked, rt3 is dead too.
	status, out = b.refresh(t, clientID, rt1, nil)
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "invalid_grant", out["error"])
	require.Contains(t, out["error_description"], "already used")
	g, err := b.store.Grant(context.Background(), c["grant_id"].(string))
	require.NoError(t, err)
	require.True(t, g.Revoked())
	status, out = b.refresh(t, clientID, rt3, nil)
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "invalid_grant", out["error"])

	// A grant a person revokes: its refresh is invalid_grant.
	f = newFlow(clientID, "http://localhost:7777/")
	f.scope = "offline_access"
	_, tok = b.exchange(t, f, b.code(t, f))
	grant := claimsOf(t, tok["access_token"].(string))["grant_id"].(string)
	_, err = b.store.RevokeGrant(context.Background(), b.org.ID, grant)
	require.NoError(t, err)
	status, out = b.refresh(t, clientID, tok["refresh_token"].(string), nil)
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "invalid_grant", out["error"])
	require.Contains(t, out["error_description"], "Sign in again")

	// A refresh token of another client is refused.
	f = newFlow(clientID, "http://localhost:7777/")
	f.scope = "offline_access"
	_, tok = b.exchange(t, f, b.code(t, f))
	other := b.registerClient(t, cursorBody)
	status, out = b.refresh(t, other, tok["refresh_token"].(string), nil)
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "invalid_grant", out["error"])
}

// An app revoking its refresh token or its access token (RFC 7009)
// revokes its grant, in the person's name.
func TestOAuthRevocation(t *testing.T) {
	t.Parallel()
	b := newAS(t)
	clientID := b.registerClient(t, cursorBody)
	revoke := func(form url.Values) int {
		res, err := http.PostForm(b.issuer+oauth.PathRevoke, form)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	for _, which := range []string{"refresh_token", "access_token"} {
		f := newFlow(clientID, "http://localhost:8787/callback")
		f.scope = "offline_access"
		_, tok := b.exchange(t, f, b.code(t, f))
		grant := claimsOf(t, tok["access_token"].(string))["grant_id"].(string)
		require.Equal(t, http.StatusUnauthorized, revoke(url.Values{"token": {tok[which].(string)}, "client_id": {"client_other"}}),
			"another client")
		require.Equal(t, http.StatusOK, revoke(url.Values{"token": {tok[which].(string)}, "client_id": {clientID}}), which)
		g, err := b.store.Grant(context.Background(), grant)
		require.NoError(t, err)
		require.True(t, g.Revoked(), which)
	}
	require.Equal(t, http.StatusOK, revoke(url.Values{"token": {"not-a-token"}, "client_id": {clientID}}), "RFC 7009: 200")
	rows, err := b.store.Audit(context.Background(), &core.AuditQuery{OrgID: b.org.ID})
	require.NoError(t, err)
	n := 0
	for _, r := range rows {
		if r.Action == core.AuditAppRevoked {
			n++
			require.Equal(t, b.person.ID, r.Actor.ID)
		}
	}
	require.Equal(t, 2, n)
}

// VS Code's real registration is accepted and its loopback redirect
// matches on any port; a ChatGPT-shaped metadata document, which lists
// private_key_jwt beside none, is a public client that signs in.
func TestOAuthRealClientsRegister(t *testing.T) {
	t.Parallel()
	b := newAS(t)
	vscode := b.registerClient(t, vscodeBody)
	consent := redirected(t, b.authorize(t, newFlow(vscode, "http://127.0.0.1:61000/").params()))
	require.Equal(t, "/oauth/consent", consent.Path)
	p, err := b.srv.Pending(context.Background(), consent.Query().Get("id"))
	require.NoError(t, err)
	require.Equal(t, "Visual Studio Code", p.ClientName)
	require.False(t, p.Verified)
	require.False(t, p.LoopbackOnly, "it also registered https URIs")
	require.Equal(t, "127.0.0.1:61000", p.RedirectHost)

	id := b.document("/chatgpt.json", `{"client_id":"{id}","client_name":"ChatGPT","redirect_uris":["https://chatgpt.com/connector/oauth/abc"],`+
		`"token_endpoint_auth_method":["none","private_key_jwt"],"grant_types":["authorization_code","refresh_token"]}`)
	f := newFlow(id, "https://chatgpt.com/connector/oauth/abc")
	f.scope = "deliberate offline_access"
	status, tok := b.exchange(t, f, b.code(t, f))
	require.Equal(t, http.StatusOK, status, tok)
	require.NotEmpty(t, tok["refresh_token"])
	g, err := b.store.Grant(context.Background(), claimsOf(t, tok["access_token"].(string))["grant_id"].(string))
	require.NoError(t, err)
	require.True(t, g.Verified, "known by its document")
	require.Equal(t, "ChatGPT", g.ClientName)

	// A loopback-only document is flagged for the consent page.
	id = b.document("/cli.json", `{"client_id":"{id}","client_name":"A CLI","redirect_uris":["http://localhost/callback"]}`)
	consent = redirected(t, b.authorize(t, newFlow(id, "http://127.0.0.1:5000/callback").params()))
	p, err = b.srv.Pending(context.Background(), consent.Query().Get("id"))
	require.NoError(t, err)
	require.True(t, p.Verified)
	require.Equal(t, host, p.VerifiedHost)
	require.True(t, p.LoopbackOnly)

	// Denied: back to the app with access_denied, state and iss.
	to, err := b.srv.Deny(context.Background(), p.ID)
	require.NoError(t, err)
	u, err := url.Parse(to)
	require.NoError(t, err)
	require.Equal(t, "access_denied", u.Query().Get("error"))
	require.Equal(t, "the-state", u.Query().Get("state"))
	require.Equal(t, b.issuer, u.Query().Get("iss"))
	_, err = b.srv.Pending(context.Background(), p.ID)
	require.ErrorIs(t, err, core.ErrNotFound)
}
