package oauth_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/api/oauth"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// register posts body to a registration endpoint on a real PostgreSQL.
func register(t *testing.T, srv *httptest.Server, contentType, body string) (int, map[string]any, http.Header) {
	t.Helper()
	res, err := http.Post(srv.URL+"/register", contentType, strings.NewReader(body))
	require.NoError(t, err)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	out := map[string]any{}
	require.NoError(t, json.Unmarshal(data, &out), string(data))
	return res.StatusCode, out, res.Header
}

// Dynamic registration accepts the real clients' bodies (OAUTH.md) as
// public clients and stores them; refuses what no public client may
// register with RFC 7591's errors; and limits registrations per address.
func TestRegistration(t *testing.T) {
	t.Parallel()
	store := pgstore.New(pgtest.NewPool(t))
	srv := httptest.NewServer(oauth.NewRegistrar(oauth.RegistrarConfig{Limit: 4, Window: time.Hour}, store, store))
	t.Cleanup(srv.Close)

	cursor := `{"client_name":"Cursor","redirect_uris":["cursor://anysphere.cursor-mcp/oauth/callback","https://www.cursor.com/agents/mcp/oauth/callback","http://localhost:8787/callback"],"grant_types":["authorization_code","refresh_token"],"response_types":["code"],"token_endpoint_auth_method":"none"}`
	status, out, hdr := register(t, srv, "application/json", cursor)
	require.Equal(t, http.StatusCreated, status, out)
	require.Equal(t, "no-store", hdr.Get("Cache-Control"))
	id, _ := out["client_id"].(string)
	require.True(t, strings.HasPrefix(id, "client_"), id)
	require.Equal(t, "none", out["token_endpoint_auth_method"], "a string, as RFC 7591 has it")
	require.Len(t, out["redirect_uris"], 3)
	stored, err := store.RegisteredClient(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, "Cursor", stored.ClientName)
	require.False(t, stored.Native)
	require.Equal(t, "127.0.0.1", stored.Address)

	// A loopback-only client, without grant types: defaults filled in.
	status, out, _ = register(t, srv, "application/json; charset=utf-8", `{"redirect_uris":["http://127.0.0.1:33418/"]}`)
	require.Equal(t, http.StatusCreated, status, out)
	require.Equal(t, []any{"authorization_code", "refresh_token"}, out["grant_types"])
	stored, err = store.RegisteredClient(context.Background(), out["client_id"].(string))
	require.NoError(t, err)
	require.True(t, stored.Native)

	for body, want := range map[string]string{
		`{"redirect_uris":["http://evil.example.com/cb"]}`:                                                  "invalid_redirect_uri",
		`{"redirect_uris":["javascript:alert(1)"]}`:                                                         "invalid_redirect_uri",
		`{"redirect_uris":["https://a.example.com/cb"],"token_endpoint_auth_method":"client_secret_basic"}`: "invalid_client_metadata",
		`{"client_name":"no redirects"}`:                                                                    "invalid_client_metadata",
		`not json`:                                                                                          "invalid_client_metadata",
		`{"redirect_uris":["https://a.example.com/cb"],"client_name":"` + strings.Repeat("x", 70<<10) + `"}`: "invalid_client_metadata",
	} {
		status, out, _ := register(t, srv, "application/json", body)
		require.Equal(t, http.StatusBadRequest, status, "%.80s", body)
		require.Equal(t, want, out["error"], "%.80s", body)
		require.NotEmpty(t, out["error_description"])
	}
	status, out, _ = register(t, srv, "application/x-www-form-urlencoded", `redirect_uris=https://a.example.com/cb`)
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "invalid_client_metadata", out["error"])

	// The address's budget: four registrations an hour here, two used.
	for range 2 {
		status, _, _ = register(t, srv, "application/json", cursor)
		require.Equal(t, http.StatusCreated, status)
	}
	status, out, hdr = register(t, srv, "application/json", cursor)
	require.Equal(t, http.StatusTooManyRequests, status, out)
	require.NotEmpty(t, hdr.Get("Retry-After"))

	// Unused clients go.
	n, err := store.DeleteUnusedClients(context.Background(), time.Now().Add(time.Minute))
	require.NoError(t, err)
	require.Equal(t, 4, n)
	_, err = store.RegisteredClient(context.Background(), id)
	require.ErrorIs(t, err, core.ErrNotFound)
}
