package oauth_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/api/oauth"
)

// The authorization server's endpoints are readable from any origin,
// without credentials, with the MCP protocol header allowed; a preflight
// is answered without reaching the endpoint.
func TestCORS(t *testing.T) {
	reached := 0
	h := oauth.CORS(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached++
		w.WriteHeader(http.StatusOK)
	}))

	pre := httptest.NewRequest(http.MethodOptions, "/token", nil)
	pre.Header.Set("Origin", "https://claude.ai")
	pre.Header.Set("Access-Control-Request-Method", "POST")
	pre.Header.Set("Access-Control-Request-Headers", "content-type, mcp-protocol-version")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, pre)
	require.Equal(t, http.StatusNoContent, rec.Code)
	require.Zero(t, reached, "the preflight never reaches the endpoint")
	require.Equal(t, "*", rec.Header().Get("Access-Control-Allow-Origin"))
	require.Contains(t, rec.Header().Get("Access-Control-Allow-Headers"), "MCP-Protocol-Version")
	require.Contains(t, rec.Header().Get("Access-Control-Allow-Methods"), "POST")
	require.Empty(t, rec.Header().Get("Access-Control-Allow-Credentials"), "never with credentials")

	req := httptest.NewRequest(http.MethodGet, "/.well-known/oauth-authorization-server", nil)
	req.Header.Set("Origin", "https://vscode.dev")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, 1, reached)
	require.Equal(t, "*", rec.Header().Get("Access-Control-Allow-Origin"))
	require.Empty(t, rec.Header().Get("Access-Control-Allow-Credentials"))

	req = httptest.NewRequest(http.MethodGet, "/jwks", nil)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Empty(t, rec.Header().Get("Access-Control-Allow-Origin"), "no Origin, no CORS headers")
	require.Equal(t, 2, reached)
}
