package oauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/api/oauth"
	"github.com/conclavehq/conclave/core"
	coreoauth "github.com/conclavehq/conclave/core/oauth"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

// sign makes a JWT of claims with key, naming kid.
func sign(t *testing.T, alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	require.NoError(t, err)
	payload, err := json.Marshal(claims)
	require.NoError(t, err)
	obj, err := s.Sign(payload)
	require.NoError(t, err)
	tok, err := obj.CompactSerialize()
	require.NoError(t, err)
	return tok
}

// The embedded server's verifier accepts its own tokens and refuses, as
// invalid_oauth_token, an expired one, one for another audience or from
// another issuer, one whose signature does not verify, one signed by a key
// it does not have, and one that is not its access token; with its keys
// unreadable it answers oauth_unavailable.
func TestOAuthVerifierRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	store := pgstore.New(pool)
	srv, err := oauth.New(ctx, oauth.Config{Issuer: "https://conclave.example"}, oauth.Deps{Store: store, Limiter: store})
	require.NoError(t, err)
	keys, err := store.SigningKeys(ctx)
	require.NoError(t, err)
	parsed, err := x509.ParsePKCS8PrivateKey(keys[0].PrivateKey)
	require.NoError(t, err)
	own, kid := parsed.(*rsa.PrivateKey), keys[0].ID
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)

	now := time.Now()
	good := func() map[string]any {
		return map[string]any{"iss": "https://conclave.example", "aud": []string{"https://conclave.example/mcp"},
			"sub": "person_1", "exp": now.Add(5 * time.Minute).Unix(), "iat": now.Unix(), "client_id": "client_1",
			"scope": "deliberate models:read", "org_id": "org_1", "grant_id": "grant_1", "jti": "at_1"}
	}
	v := srv.Verifier()
	tok, err := v.VerifyToken(ctx, sign(t, jose.RS256, own, kid, good()))
	require.NoError(t, err)
	require.Equal(t, &coreoauth.Token{PersonID: "person_1", OrgID: "org_1", GrantID: "grant_1", ClientID: "client_1",
		Scopes: []string{"models:read", "deliberate"}, Expires: time.Unix(now.Add(5*time.Minute).Unix(), 0), Issuer: "https://conclave.example"}, tok)

	with := func(k string, val any) map[string]any {
		c := good()
		if val == nil {
			delete(c, k)
		} else {
			c[k] = val
		}
		return c
	}
	for name, token := range map[string]string{
		"expired":        sign(t, jose.RS256, own, kid, with("exp", now.Add(-time.Minute).Unix())),
		"no expiry":      sign(t, jose.RS256, own, kid, with("exp", nil)),
		"wrong audience": sign(t, jose.RS256, own, kid, with("aud", "client_1")),
		"wrong issuer":   sign(t, jose.RS256, own, kid, with("iss", "https://evil.example")),
		"not yet valid":  sign(t, jose.RS256, own, kid, with("nbf", now.Add(time.Hour).Unix())),
		"bad signature":  sign(t, jose.RS256, other, kid, good()),
		"unknown kid":    sign(t, jose.RS256, other, "key_unknown", good()),
		"an ID token":    sign(t, jose.RS256, own, kid, with("grant_id", nil)),
		"not a JWT":      "cclrt_abc",
		"alg none":       "eyJhbGciOiJub25lIn0.eyJpc3MiOiJodHRwczovL2NvbmNsYXZlLmV4YW1wbGUifQ.",
	} {
		_, err := v.VerifyToken(ctx, token)
		require.Error(t, err, name)
		require.Equal(t, core.CodeInvalidOAuthToken, core.AsError(err).Code, "%s: %v", name, err)
	}

	// A server whose database went away before it read its keys cannot
	// check a token.
	pool2 := pgtest.NewPool(t)
	store2 := pgstore.New(pool2)
	srv2, err := oauth.New(ctx, oauth.Config{Issuer: "https://conclave.example"}, oauth.Deps{Store: store2, Limiter: store2})
	require.NoError(t, err)
	pool2.Close()
	_, err = srv2.Verifier().VerifyToken(ctx, sign(t, jose.RS256, own, kid, good()))
	require.Equal(t, core.CodeOAuthUnavailable, core.AsError(err).Code, "%v", err)
}

// Replicas on one database share one signing key: a token one issues, the
// other verifies.
func TestOAuthReplicasShareTheKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	var servers []*oauth.Server
	for range 2 {
		pool, err := pgxpool.New(ctx, url)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		store := pgstore.New(pool)
		srv, err := oauth.New(ctx, oauth.Config{Issuer: "https://conclave.example"}, oauth.Deps{Store: store, Limiter: store})
		require.NoError(t, err)
		servers = append(servers, srv)
	}
	res := httptest.NewRecorder()
	servers[0].ServeHTTP(res, httptest.NewRequest(http.MethodGet, oauth.PathJWKS, nil))
	other := httptest.NewRecorder()
	servers[1].ServeHTTP(other, httptest.NewRequest(http.MethodGet, oauth.PathJWKS, nil))
	require.Equal(t, http.StatusOK, res.Code)
	require.JSONEq(t, res.Body.String(), other.Body.String())
}

// Another authorization server's tokens are verified by its published
// keys (found through its metadata), with the same iss, aud and exp rules;
// the token says who it is for, and core/access finds the person.
func TestOAuthExternalVerifier(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	var issuer string
	fetches := 0
	ext := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			_ = json.NewEncoder(w).Encode(map[string]string{"issuer": issuer, "jwks_uri": issuer + "/keys"})
		case "/keys":
			fetches++
			_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1",
				Algorithm: "ES256", Use: "sig"}}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(ext.Close)
	issuer = ext.URL
	v, err := oauth.NewExternalVerifier(oauth.ExternalConfig{Issuer: issuer, Audience: "https://conclave.example/mcp"})
	require.NoError(t, err)
	claims := map[string]any{"iss": issuer, "aud": "https://conclave.example/mcp", "sub": "auth0|123",
		"exp": time.Now().Add(time.Minute).Unix(), "email": "Mia@Acme.example", "email_verified": true,
		"scope": "deliberate openid", "org_id": "org_1"}
	tok, err := v.VerifyToken(ctx, sign(t, jose.ES256, key, "k1", claims))
	require.NoError(t, err)
	require.True(t, tok.External)
	require.Equal(t, "auth0|123", tok.PersonID)
	require.Equal(t, "mia@acme.example", tok.Email)
	require.Equal(t, "org_1", tok.OrgID)
	require.Empty(t, tok.GrantID)
	require.Equal(t, []string{"deliberate"}, tok.Scopes)

	claims["email_verified"] = false
	tok, err = v.VerifyToken(ctx, sign(t, jose.ES256, key, "k1", claims))
	require.NoError(t, err)
	require.Empty(t, tok.Email, "an email the issuer does not vouch for is not used")

	claims["aud"] = "https://elsewhere.example/mcp"
	_, err = v.VerifyToken(ctx, sign(t, jose.ES256, key, "k1", claims))
	require.Equal(t, core.CodeInvalidOAuthToken, core.AsError(err).Code)
	// Unknown kids reload the key set at most once per MinReload.
	for range 5 {
		_, err = v.VerifyToken(ctx, sign(t, jose.ES256, key, "k-unknown", claims))
		require.Equal(t, core.CodeInvalidOAuthToken, core.AsError(err).Code)
	}
	require.Equal(t, 1, fetches)

	down, err := oauth.NewExternalVerifier(oauth.ExternalConfig{Issuer: "http://127.0.0.1:1", Audience: "https://conclave.example/mcp"})
	require.NoError(t, err)
	claims["iss"] = "http://127.0.0.1:1"
	_, err = down.VerifyToken(ctx, sign(t, jose.ES256, key, "k1", claims))
	require.Equal(t, core.CodeOAuthUnavailable, core.AsError(err).Code)

	// Several issuers: each token goes to the verifier of the issuer it
	// names; one naming none of them is refused without a fetch.
	both, err := oauth.NewExternalVerifiers([]string{"http://127.0.0.1:1", issuer},
		oauth.ExternalConfig{Audience: "https://conclave.example/mcp"})
	require.NoError(t, err)
	claims["iss"], claims["aud"] = issuer, "https://conclave.example/mcp"
	tok, err = both.VerifyToken(ctx, sign(t, jose.ES256, key, "k1", claims))
	require.NoError(t, err)
	require.Equal(t, issuer, tok.Issuer)
	claims["iss"] = "http://127.0.0.1:1"
	_, err = both.VerifyToken(ctx, sign(t, jose.ES256, key, "k1", claims))
	require.Equal(t, core.CodeOAuthUnavailable, core.AsError(err).Code, "the second issuer's verifier answered")
	claims["iss"] = "https://stranger.example"
	_, err = both.VerifyToken(ctx, sign(t, jose.ES256, key, "k1", claims))
	require.Equal(t, core.CodeInvalidOAuthToken, core.AsError(err).Code)
	_, err = both.VerifyToken(ctx, "not.a.jwt")
	require.Equal(t, core.CodeInvalidOAuthToken, core.AsError(err).Code)
}
