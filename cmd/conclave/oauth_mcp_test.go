package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/mcp"
)

// appTokens are what /token answered for a connected app.
type appTokens struct {
	Access   string `json:"access_token"`
	Refresh  string `json:"refresh_token"`
	Scope    string `json:"scope"`
	ClientID string `json:"-"`
}

// appToken runs the whole flow by hand, as an app that registers itself
// does: POST /register, the person's browser through /authorize and the
// consent page (og.browser), then the code exchanged at /token with PKCE.
// scope is what the app asks for.
func (og *oauthGateway) appToken(t testing.TB, scope string) appTokens {
	t.Helper()
	const redirect = "http://127.0.0.1:9/callback"
	reg := postJSON(t, og.origin+"/register", map[string]any{"client_name": "Hand-rolled app", "redirect_uris": []string{redirect},
		"grant_types": []string{"authorization_code", "refresh_token"}, "token_endpoint_auth_method": "none"})
	clientID, _ := reg["client_id"].(string)
	require.NotEmpty(t, clientID, "%v", reg)
	verifier := rand.Text() + rand.Text()
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect}, "scope": {scope},
		"state": {"s-" + rand.Text()}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])},
		"code_challenge_method": {"S256"}, "resource": {og.origin + mcp.Path}}
	res, err := og.browser(t)(context.Background(), &auth.AuthorizationArgs{URL: og.origin + "/authorize?" + q.Encode()})
	require.NoError(t, err)
	status, body := og.tokenRequest(t, url.Values{"grant_type": {"authorization_code"}, "code": {res.Code}, "redirect_uri": {redirect},
		"client_id": {clientID}, "code_verifier": {verifier}, "resource": {og.origin + mcp.Path}})
	require.Equal(t, http.StatusOK, status, "%s", body)
	var tok appTokens
	require.NoError(t, json.Unmarshal(body, &tok))
	tok.ClientID = clientID
	return tok
}

// tokenRequest posts a form to /token.
func (og *oauthGateway) tokenRequest(t testing.TB, form url.Values) (int, []byte) {
	t.Helper()
	res, err := http.PostForm(og.origin+"/token", form)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, b
}

func postJSON(t testing.TB, u string, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	res, err := http.Post(u, "application/json", bytes.NewReader(b))
	require.NoError(t, err)
	defer res.Body.Close()
	out := map[string]any{}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
	return out
}

// mcpReply is one answer of /mcp.
type mcpReply struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

// rpc posts a JSON-RPC body to /mcp with token as the bearer.
func (og *oauthGateway) rpc(t *testing.T, token, body string) mcpReply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, og.origin+mcp.Path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	r := mcpReply{status: res.StatusCode, header: res.Header, raw: string(raw)}
	if len(raw) > 0 && raw[0] == '{' {
		require.NoError(t, json.Unmarshal(raw, &r.body), "%s", raw)
	}
	return r
}

// call sends one tools/call and returns the reply.
func (og *oauthGateway) call(t *testing.T, token, tool string, args any) mcpReply {
	t.Helper()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	require.NoError(t, err)
	return og.rpc(t, token, string(b))
}

// toolError is the code of a tool result's error, "" when it succeeded.
func toolError(t *testing.T, r mcpReply) string {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, r.raw)
	res, ok := r.body["result"].(map[string]any)
	require.True(t, ok, r.raw)
	if res["isError"] != true {
		return ""
	}
	text := res["content"].([]any)[0].(map[string]any)["text"].(string)
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(text), &e), text)
	return e.Error.Code
}

// ownerPrincipal is the owner acting on the pages, as the people service
// sees them.
func (og *oauthGateway) principal(t *testing.T, personID string) *access.Principal {
	t.Helper()
	ctx := context.Background()
	person, err := og.g.db.store.GetPerson(ctx, personID)
	require.NoError(t, err)
	m, err := og.g.db.store.Membership(ctx, personID, og.org.ID)
	require.NoError(t, err)
	return &access.Principal{Kind: core.PrincipalSession, Person: person, Role: m.Role, Org: og.org, Address: "127.0.0.1"}
}

// A connected app's token on /mcp and nowhere else: its tool calls run as
// its person, within its scopes (a call it has no scope for is HTTP 403
// with an insufficient_scope challenge; in a batch, that element's tool
// error); a forged token is 401 with the challenge before anything is
// dispatched; /v1 takes keys only; revoking the grant through the people
// service ends its calls (invalid_oauth_token) and its refresh
// (invalid_grant), and the audit trail has both; a person who leaves the
// organisation takes their apps with them; the operator lists and revokes
// apps with `conclave apps`.
func TestOAuthTokenOnMCP(t *testing.T) {
	t.Parallel()
	og := startOAuthGateway(t, func(c *config.Config) { c.Auth.GrantCacheTTL = 0 })
	ctx := context.Background()
	owner, err := og.g.db.store.PersonByEmail(ctx, og.email)
	require.NoError(t, err)

	full := og.appToken(t, "models:read deliberate estimate receipts:read offline_access")
	require.Empty(t, toolError(t, og.call(t, full.Access, "list_modes", map[string]any{})))
	require.NotEmpty(t, full.Refresh)

	t.Run("a deliberation at real cost", func(t *testing.T) {
		_, err := og.g.db.store.AddFunds(ctx, &core.AddFundsParams{OrgID: og.org.ID, Amount: 50 * core.MicrosPerUSD, Memo: "test"})
		require.NoError(t, err)
		r := og.call(t, full.Access, "deliberate", map[string]any{"model": "conclave-standard",
			"messages": []map[string]string{{"role": "user", "content": "Should a five-person team adopt trunk-based development?"}}})
		require.Empty(t, toolError(t, r), r.raw)
		res := r.body["result"].(map[string]any)["structuredContent"].(map[string]any)
		panel := res["panel"].(map[string]any)
		require.Equal(t, "0", fmt.Sprint(panel["platform_fee_usd"]), "no fee on plan usage")
		require.Equal(t, "0", fmt.Sprint(panel["surcharge_usd"]), "no surcharge on plan usage")
		rc := og.call(t, full.Access, "get_receipt", map[string]any{"request_id": panel["request_id"]})
		require.Empty(t, toolError(t, rc), rc.raw)
		receipt := rc.body["result"].(map[string]any)["structuredContent"].(map[string]any)["receipt"].(map[string]any)
		require.Equal(t, "oauth_app", receipt["payer_kind"])
		require.Equal(t, owner.ID, receipt["person_id"])
		require.Equal(t, og.org.ID, receipt["payer"])
		require.Equal(t, receipt["billed_usd"], receipt["token_charge_usd"], "billed the token charge alone")
	})

	t.Run("authoring with a person's token", func(t *testing.T) {
		// save_mode and list_mode take a signed-in person's token as they
		// take a key (spec: Authentication 6); the role table decides.
		var spec map[string]any
		require.NoError(t, json.Unmarshal([]byte(`{"name": "App Panel", "ticker": "APPP",
			"use_when": "Trade-offs where a second and a third opinion are worth a few cents.",
			"description": "Three seats from three provider families.",
			"seats_by_tier": {"plus": [
				{"engine": "sim/atlas", "backup": "sim/gemini-flash"},
				{"engine": "sim/sonnet", "backup": "sim/atlas"},
				{"engine": "sim/gemini-flash", "backup": "sim/sonnet"}]},
			"staff": {"classifier": {"engine": "sim/swift"}, "judge": {"engine": "sim/sonnet", "backup": "sim/atlas"},
				"synthesis": {"engine": "sim/atlas", "backup": "sim/sonnet"}},
			"critique": "deep", "max_rounds": 2, "quorum": 2, "straggler_deadline_s": 20, "express_threshold": 0.2,
			"cost_ceiling_usd": 1.5, "api_commercial": {"price_tier": "standard",
				"q_surcharge_by_depth": {"light": 0.10, "medium": 0.15, "deep": 0.20}, "q_surcharge_usd": 0.20}}`), &spec))
		author := og.appToken(t, "models:read modes:write")
		r := og.call(t, author.Access, "save_mode", map[string]any{"spec": spec, "release": true})
		require.Empty(t, toolError(t, r), r.raw)
		modeID := r.body["result"].(map[string]any)["structuredContent"].(map[string]any)["mode"].(map[string]any)["id"]
		require.NotEmpty(t, modeID, r.raw)
		r = og.call(t, author.Access, "list_mode", map[string]any{"mode_id": modeID})
		require.Empty(t, toolError(t, r), r.raw)
		audit, err := og.g.db.store.Audit(ctx, &core.AuditQuery{OrgID: og.org.ID, Limit: 50})
		require.NoError(t, err)
		var drafted bool
		for _, e := range audit {
			drafted = drafted || (e.Action == core.AuditModeDrafted && e.Actor.Kind == core.ActorPerson && e.Actor.ID == owner.ID)
		}
		require.True(t, drafted, "the person is the author in the audit trail")
	})

	t.Run("scopes", func(t *testing.T) {
		narrow := og.appToken(t, "models:read")
		require.Empty(t, narrow.Refresh, "no offline_access, no refresh token")
		require.Empty(t, toolError(t, og.call(t, narrow.Access, "list_modes", map[string]any{})))
		r := og.call(t, narrow.Access, "estimate", map[string]any{"model": "conclave-standard",
			"messages": []map[string]string{{"role": "user", "content": "Should we adopt trunk-based development?"}}})
		require.Equal(t, http.StatusForbidden, r.status, r.raw)
		ch := r.header.Get("WWW-Authenticate")
		require.Contains(t, ch, `error="insufficient_scope"`)
		require.Contains(t, ch, `resource_metadata="`+og.origin+mcp.MetadataPath+`"`)
		require.Contains(t, ch, `scope="`)
		require.Contains(t, r.raw, `"insufficient_scope"`)
		// In a batch, the element the token may not run gets the tool error.
		batch := og.rpc(t, narrow.Access, `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_modes","arguments":{}}},`+
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_receipt","arguments":{"request_id":"req_x"}}}]`)
		require.Equal(t, http.StatusOK, batch.status, batch.raw)
		var elems []map[string]any
		require.NoError(t, json.Unmarshal([]byte(batch.raw), &elems))
		require.Len(t, elems, 2)
		require.NotContains(t, fmt.Sprint(elems[0]["result"]), "isError:true")
		require.Contains(t, fmt.Sprint(elems[1]["result"]), "insufficient_scope")
	})

	t.Run("refused before dispatch", func(t *testing.T) {
		parts := strings.Split(full.Access, ".")
		forged := parts[0] + "." + parts[1] + "." + base64.RawURLEncoding.EncodeToString([]byte("not the signature"))
		for _, tok := range []string{forged, "not-a-jwt", full.Access[:len(full.Access)-4] + "AAAA"} {
			r := og.rpc(t, tok, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`)
			require.Equal(t, http.StatusUnauthorized, r.status, r.raw)
			require.Contains(t, r.header.Get("WWW-Authenticate"), `resource_metadata="`+og.origin+mcp.MetadataPath+`"`)
			require.Contains(t, r.raw, `"invalid_oauth_token"`)
		}
		// The REST API takes API keys only.
		req, err := http.NewRequest(http.MethodGet, og.origin+"/v1/models", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+full.Access)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	})

	t.Run("a member who leaves takes their apps along", func(t *testing.T) {
		mctx := core.WithActor(ctx, core.Operator)
		member, link, err := og.g.people.CreatePerson(mctx, og.org.ID, "mo@acme.example", "Mo Member", core.RoleMember)
		require.NoError(t, err)
		_, err = og.g.people.AcceptWithPassword(ctx, link[strings.LastIndex(link, "/")+1:], "", "a long member passphrase", "127.0.0.1")
		require.NoError(t, err)
		mg := *og
		mg.email, mg.password = "mo@acme.example", "a long member passphrase"
		tok := mg.appToken(t, "models:read")
		require.Empty(t, toolError(t, og.call(t, tok.Access, "list_modes", map[string]any{})))
		// A member sees only their own apps; the owner sees everyone's.
		apps, err := og.g.people.Apps(ctx, og.principal(t, member.ID))
		require.NoError(t, err)
		require.Len(t, apps, 1)
		require.NoError(t, og.g.db.store.RemoveMember(mctx, og.org.ID, member.ID))
		require.Equal(t, string(core.CodeInvalidOAuthToken), toolError(t, og.call(t, tok.Access, "list_modes", map[string]any{})))
		// initialize still answers: the token verified; its calls are refused.
		r := og.rpc(t, tok.Access, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`)
		require.Equal(t, http.StatusOK, r.status, r.raw)
	})

	t.Run("revoked from the people service", func(t *testing.T) {
		p := og.principal(t, owner.ID)
		apps, err := og.g.people.Apps(ctx, p)
		require.NoError(t, err)
		claims := accessClaims(t, full.Access)
		var found bool
		for _, a := range apps {
			found = found || a.ID == claims["grant_id"]
		}
		require.True(t, found, "the owner sees the app's grant")
		g, err := og.g.people.RevokeApp(ctx, p, claims["grant_id"].(string))
		require.NoError(t, err)
		require.True(t, g.Revoked())
		require.Equal(t, string(core.CodeInvalidOAuthToken), toolError(t, og.call(t, full.Access, "list_modes", map[string]any{})))
		status, body := og.tokenRequest(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {full.Refresh},
			"client_id": {full.ClientID}})
		require.Equal(t, http.StatusBadRequest, status, "%s", body)
		require.Contains(t, string(body), `"invalid_grant"`)
		entries, err := og.g.db.store.Audit(ctx, &core.AuditQuery{OrgID: og.org.ID, Limit: 100})
		require.NoError(t, err)
		var granted, revoked bool
		for _, e := range entries {
			granted = granted || (e.Action == core.AuditAppGranted && e.Object == g.ID)
			revoked = revoked || (e.Action == core.AuditAppRevoked && e.Object == g.ID && e.Actor.ID == owner.ID)
		}
		require.True(t, granted && revoked, "the grant and its revocation are audited: %+v", entries)
	})

	t.Run("conclave apps", func(t *testing.T) {
		tok := og.appToken(t, "models:read")
		grantID := accessClaims(t, tok.Access)["grant_id"].(string)
		cfgPath := filepath.Join(t.TempDir(), "conclave.yaml")
		require.NoError(t, os.WriteFile(cfgPath, []byte(fmt.Sprintf("database:\n  url: %q\n", og.g.cfg.Database.URL)), 0o600))
		pool, err := pgxpool.New(ctx, og.g.cfg.Database.URL)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		b := &adminBundle{cfgPath: cfgPath, store: pgstore.New(pool)}
		list := b.mustRun(t, "apps", "list", "--org", og.org.ID)
		var active int
		for _, a := range list["apps"].([]any) {
			if a.(map[string]any)["status"] == "active" {
				active++
			}
		}
		require.GreaterOrEqual(t, active, 1, "%v", list)
		out := b.mustRun(t, "apps", "revoke", "--org", og.org.ID, "--grant", grantID)
		require.Equal(t, "revoked", out["status"])
		require.Equal(t, string(core.CodeInvalidOAuthToken), toolError(t, og.call(t, tok.Access, "list_modes", map[string]any{})))
		_, err = b.run(t, "apps", "revoke", "--org", og.org.ID, "--grant", "grant_nope")
		require.Error(t, err)
	})
}
