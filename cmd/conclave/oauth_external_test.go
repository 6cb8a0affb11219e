package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/mcp"
)

// With auth.authorization_servers naming another server, the embedded one
// is off (its paths are pages' 404s), the protected-resource document
// names the other, and /mcp takes that server's tokens, verified by its
// published keys: the person by the token's verified email, the
// organisation by their only membership. A token for someone Conclave does
// not know verifies but runs nothing.
func TestOAuthExternalAuthorizationServer(t *testing.T) {
	t.Parallel()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	var issuer string
	ext := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			_ = json.NewEncoder(w).Encode(map[string]string{"issuer": issuer, "jwks_uri": issuer + "/keys"})
		case "/keys":
			_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1",
				Algorithm: "ES256", Use: "sig"}}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(ext.Close)
	issuer = ext.URL
	og := startOAuthGateway(t, func(c *config.Config) { c.Auth.AuthorizationServers = []string{issuer} })

	require.Equal(t, []any{issuer}, getJSON(t, og.origin+mcp.MetadataPath)["authorization_servers"])
	for _, p := range []string{"/.well-known/oauth-authorization-server", "/register", "/jwks"} {
		res, err := http.Get(og.origin + p)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusNotFound, res.StatusCode, p)
	}

	token := func(claims map[string]any) string {
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: "k1"}},
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
	claims := map[string]any{"iss": issuer, "aud": og.origin + mcp.Path, "sub": "idp|olive", "email": og.email,
		"email_verified": true, "scope": "models:read", "exp": time.Now().Add(5 * time.Minute).Unix()}
	require.Empty(t, toolError(t, og.call(t, token(claims), "list_modes", map[string]any{})))

	claims["email"] = "stranger@elsewhere.example"
	require.Equal(t, string(core.CodeInvalidOAuthToken), toolError(t, og.call(t, token(claims), "list_modes", map[string]any{})))

	claims["aud"] = "https://another.example/mcp"
	r := og.call(t, token(claims), "list_modes", map[string]any{})
	require.Equal(t, http.StatusUnauthorized, r.status, r.raw)
}
