package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/conclavehq/conclave/internal/nodetest"
	"github.com/conclavehq/conclave/mcp"
)

// The TypeScript MCP clients that sign a person in
// (compat/mcp/oauth.test.mjs): @modelcontextprotocol/client 2.x by a
// Client ID Metadata Document and by dynamic registration, and
// @modelcontextprotocol/sdk 1.x by dynamic registration, each ending in a
// tools/call of list_modes. The person's browser is this test's: an
// endpoint compiled only into the test signs the owner in and approves the
// consent page for the authorization URL the client was sent to, and
// answers where the browser was sent back.
func TestOAuthTypeScriptClients(t *testing.T) {
	t.Parallel()
	nodetest.Require(t)
	og := startOAuthGateway(t)
	const redirect = "http://127.0.0.1:9/callback"
	cimd := "https://" + docHost + "/ts/client.json"
	og.docs["/ts/client.json"] = `{"client_id":"` + cimd + `","client_name":"TypeScript client (CIMD)",` +
		`"redirect_uris":["` + redirect + `"],"grant_types":["authorization_code","refresh_token"],` +
		`"response_types":["code"],"token_endpoint_auth_method":"none"}`
	approver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := url.Parse(r.URL.Query().Get("url"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		res, err := og.browser(t)(r.Context(), &auth.AuthorizationArgs{URL: u.String()})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		back := u.Query().Get("redirect_uri") + "?" + url.Values{"code": {res.Code}, "state": {res.State}, "iss": {res.Iss}}.Encode()
		_ = json.NewEncoder(w).Encode(map[string]string{"location": back})
	}))
	t.Cleanup(approver.Close)
	nodetest.Test(t, 3*time.Minute, map[string]string{
		"CONCLAVE_MCP_URL": og.origin + mcp.Path, "CONCLAVE_APPROVER": approver.URL,
		"CONCLAVE_CIMD_URL": cimd, "CONCLAVE_REDIRECT": redirect,
	}, "mcp/oauth.test.mjs")
}
