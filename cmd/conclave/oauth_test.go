package main

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/stretchr/testify/require"

	apioauth "github.com/conclavehq/conclave/api/oauth"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/pgtest"
	"github.com/conclavehq/conclave/mcp"
)

// oauthGateway is the gateway built in this process, as serve builds it,
// on a loopback origin, with an organisation and its owner, who has a
// password. Client metadata documents are served from a loopback TLS
// server the authorization server reaches through an injected resolver
// and dialer (the fetcher refuses loopback addresses otherwise).
type oauthGateway struct {
	g        *gateway
	origin   string
	org      *core.Org
	email    string
	password string
	docs     map[string]string
}

const docHost = "client.example.com" // httptest's certificate names example.com and its subdomains

func startOAuthGateway(t testing.TB, tune ...func(*config.Config)) *oauthGateway {
	t.Helper()
	ctx := core.WithActor(context.Background(), core.Actor{Kind: core.ActorSystem})
	og := &oauthGateway{email: "olive@acme.example", password: "a long owner passphrase", docs: map[string]string{}}
	docs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, ok := og.docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, d)
	}))
	t.Cleanup(docs.Close)
	roots := x509.NewCertPool()
	roots.AddCert(docs.Certificate())

	cfg, err := config.Builtin()
	require.NoError(t, err)
	cfg.Database.URL = pgtest.NewDatabase(t)
	cfg.DataDir = t.TempDir()
	cfg.Server.Addr, cfg.Server.OperatorAddr = "127.0.0.1:0", config.OperatorOff
	for _, f := range tune {
		f(cfg)
	}
	require.NoError(t, cfg.Validate())
	og.g = &gateway{cfg: cfg, log: slog.New(slog.DiscardHandler), cimd: apioauth.FetcherConfig{RootCAs: roots,
		LookupIP: func(_ context.Context, host string) ([]netip.Addr, error) {
			if host != docHost {
				return nil, fmt.Errorf("no such host %s", host)
			}
			return []netip.Addr{netip.MustParseAddr("8.8.8.8")}, nil
		},
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, docs.Listener.Addr().String())
		}}}
	t.Cleanup(og.g.close)
	require.NoError(t, og.g.build(ctx))
	public, err := listen(ctx, cfg, og.g.log, cfg.Server.Addr, nil)
	require.NoError(t, err)
	t.Cleanup(public.close)
	require.NoError(t, og.g.mountPublic(ctx, public))
	public.start()
	og.origin = og.g.origin

	og.org, _, err = og.g.db.store.CreateOrg(ctx, &core.CreateOrgParams{Name: "Acme Research", Ticker: "ACME"})
	require.NoError(t, err)
	_, link, err := og.g.people.CreatePerson(core.WithActor(ctx, core.Operator), og.org.ID, og.email, "Olive Owner", core.RoleOwner)
	require.NoError(t, err)
	_, err = og.g.people.AcceptWithPassword(ctx, link[strings.LastIndex(link, "/")+1:], "", og.password, "127.0.0.1")
	require.NoError(t, err)
	return og
}

// browser is the person's browser without a browser: a cookie jar that
// signs in with the password and answers the consent page with Allow,
// stopping where the authorization server sends it back to the app.
func (og *oauthGateway) browser(t testing.TB) auth.AuthorizationCodeFetcher {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(r *http.Request, _ []*http.Request) error {
		if !strings.HasPrefix(r.URL.String(), og.origin) {
			return http.ErrUseLastResponse // back to the app: its redirect URI
		}
		return nil
	}}
	res, err := c.PostForm(og.origin+"/sign-in", url.Values{"email": {og.email}, "password": {og.password}})
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, "signed in, and sent home")
	idRe := regexp.MustCompile(`name="id" value="([^"]+)"`)
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		res, err := c.Get(args.URL)
		if err != nil {
			return nil, err
		}
		page, _ := io.ReadAll(res.Body)
		res.Body.Close()
		m := idRe.FindSubmatch(page)
		if res.StatusCode != http.StatusOK || m == nil {
			return nil, fmt.Errorf("the consent page answered %d: %s", res.StatusCode, page)
		}
		res, err = c.PostForm(og.origin+"/oauth/consent", url.Values{"id": {string(m[1])}, "decision": {"approve"},
			"org": {og.org.ID}})
		if err != nil {
			return nil, err
		}
		res.Body.Close()
		back, err := url.Parse(res.Header.Get("Location"))
		if res.StatusCode != http.StatusFound || err != nil {
			return nil, fmt.Errorf("the approval answered %d, not a redirect back to the app", res.StatusCode)
		}
		q := back.Query()
		if q.Get("error") != "" {
			return nil, fmt.Errorf("refused: %s: %s", q.Get("error"), q.Get("error_description"))
		}
		return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
	}
}

// accessClaims decodes an access token's claims.
func accessClaims(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	require.Len(t, parts, 3)
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	out := map[string]any{}
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}

// The Go MCP SDK's authorization code handler connects to /mcp on a
// loopback issuer, once by a Client ID Metadata Document and once by
// dynamic registration: it finds the protected-resource document, the
// authorization server's metadata (its issuer byte-equal to
// authorization_servers[0]), signs the person in through the consent
// page, checks iss, exchanges the code with PKCE and resource, and gets a
// token for /mcp with the person's organisation, grant and scopes, and a
// refresh token; the session goes on to a tools/call of list_modes.
func TestOAuthGoSDKSignsInByCIMDAndDCR(t *testing.T) {
	t.Parallel()
	og := startOAuthGateway(t)

	// The documents agree on the issuer, byte for byte.
	prm := getJSON(t, og.origin+mcp.MetadataPath)
	require.Equal(t, []any{og.origin}, prm["authorization_servers"])
	for _, p := range []string{apioauth.PathMetadata, apioauth.PathOpenIDMetadata} {
		require.Equal(t, og.origin, getJSON(t, og.origin+p)["issuer"], p)
	}

	clientID := "https://" + docHost + "/go-sdk/client.json"
	og.docs["/go-sdk/client.json"] = `{"client_id":"` + clientID + `","client_name":"Go SDK (CIMD)",` +
		`"redirect_uris":["http://127.0.0.1/callback"],"grant_types":["authorization_code","refresh_token"],` +
		`"token_endpoint_auth_method":"none"}`
	cases := map[string]*auth.AuthorizationCodeHandlerConfig{
		"cimd": {ClientIDMetadataDocumentConfig: &auth.ClientIDMetadataDocumentConfig{URL: clientID},
			RedirectURL: "http://127.0.0.1:1/callback"},
		"dcr": {DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName: "Go SDK (DCR)", RedirectURIs: []string{"http://127.0.0.1:1/callback"},
			GrantTypes: []string{"authorization_code", "refresh_token"}, TokenEndpointAuthMethod: "none"}}},
	}
	for name, hc := range cases {
		t.Run(name, func(t *testing.T) {
			hc.AuthorizationCodeFetcher = og.browser(t)
			hc.RequestRefreshToken = true
			h, err := auth.NewAuthorizationCodeHandler(hc)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			client := sdk.NewClient(&sdk.Implementation{Name: "conclave-oauth-test", Version: "1"}, nil)
			cs, connErr := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: og.origin + mcp.Path, OAuthHandler: h,
				MaxRetries: -1}, nil)

			ts, err := h.TokenSource(ctx)
			require.NoError(t, err)
			require.NotNil(t, ts, "the sign-in finished with a token (connect: %v)", connErr)
			tok, err := ts.Token()
			require.NoError(t, err)
			require.NotEmpty(t, tok.RefreshToken, "offline_access asked: a refresh token")
			c := accessClaims(t, tok.AccessToken)
			require.Equal(t, og.origin, c["iss"])
			require.Equal(t, []any{og.origin + mcp.Path}, c["aud"])
			require.Equal(t, og.org.ID, c["org_id"])
			require.Equal(t, strings.Join(core.AllScopes, " "), c["scope"])
			require.NotEmpty(t, c["grant_id"])
			if name == "cimd" {
				require.Equal(t, clientID, c["client_id"])
			} else {
				require.True(t, strings.HasPrefix(c["client_id"].(string), "client_"), c["client_id"])
			}
			g, err := og.g.db.store.Grant(ctx, c["grant_id"].(string))
			require.NoError(t, err)
			require.Equal(t, name == "cimd", g.Verified)

			require.NoError(t, connErr)
			defer cs.Close()
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "list_modes", Arguments: map[string]any{}})
			require.NoError(t, err)
			require.False(t, res.IsError, "%+v", res.Content)
		})
	}
}

// getJSON reads a JSON document.
func getJSON(t *testing.T, u string) map[string]any {
	t.Helper()
	res, err := http.Get(u)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, u)
	out := map[string]any{}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
	return out
}

// An unknown client at the served /authorize is a page, not a redirect;
// the pages, /v1 and /mcp keep their paths.
func TestOAuthMountedPaths(t *testing.T) {
	t.Parallel()
	og := startOAuthGateway(t)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Get(og.origin + "/authorize?response_type=code&client_id=client_nope&redirect_uri=https%3A%2F%2Fevil.example%2Fcb")
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	require.Empty(t, res.Header.Get("Location"))
	require.Contains(t, string(body), "The app is not known")

	res, err = c.Get(og.origin + "/oauth/consent?id=authreq_nope")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusSeeOther, res.StatusCode, "the consent page is a page: sign in first")
	require.True(t, strings.HasPrefix(res.Header.Get("Location"), "/sign-in?next="), res.Header.Get("Location"))

	for path, want := range map[string]int{"/jwks": 200, "/v1/models": 401, "/token": 405, "/register": 405, "/revoke": 405} {
		res, err := c.Get(og.origin + path)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, want, res.StatusCode, path)
	}
	require.NotNil(t, og.g.tokens, "the gateway exposes the verifier")
}
