package mcp_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/api"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/mcp"
)

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},` +
	`"clientInfo":{"name":"raw","version":"1"}}}`

// The tool endpoint's HTTP behaviour, one row per rule of the spec, sent
// as raw HTTP: the status, the JSON-RPC code and the headers a client sees.
func TestEndpointHTTPBehaviour(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *setupOpts) { o.maxBodyBytes = 4096 })
	unknownKey, _ := core.NewKeySecret(false)
	type row struct {
		name    string
		method  string
		key     string // "-" for none
		body    string
		headers []string
		status  int
		rpcCode int    // 0 for no JSON-RPC error
		code    string // the wire code in error.data, when there is one
		empty   bool   // no body at all
	}
	rows := []row{
		{name: "GET", method: "GET", status: 405, rpcCode: -32000, code: "method_not_allowed"},
		{name: "DELETE", method: "DELETE", status: 405, rpcCode: -32000, code: "method_not_allowed"},
		{name: "PUT", method: "PUT", body: initialize, status: 405, rpcCode: -32000, code: "method_not_allowed"},
		{name: "no Authorization", key: "-", body: initialize, status: 401, rpcCode: -32001, code: "invalid_api_key"},
		{name: "unknown key", key: unknownKey, body: initialize, status: 401, rpcCode: -32001, code: "invalid_api_key"},
		{name: "malformed key", key: "sk-nope", body: initialize, status: 401, rpcCode: -32001, code: "invalid_api_key"},
		{name: "Basic scheme", key: "-", body: initialize, headers: []string{"Authorization", "Basic dXNlcjpwYXNz"},
			status: 401, rpcCode: -32001, code: "invalid_api_key"},
		{name: "browser Origin", body: initialize, headers: []string{"Origin", "https://example.com"},
			status: 403, rpcCode: -32000, code: "browser_origin_not_allowed"},
		{name: "browser Origin without a key", key: "-", body: initialize, headers: []string{"Origin", "null"},
			status: 403, rpcCode: -32000, code: "browser_origin_not_allowed"},
		{name: "body over the cap", body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 5000) + `"}}`,
			status: 413, rpcCode: -32600, code: "request_too_large"},
		{name: "unparseable JSON", body: `{"jsonrpc":"2.0","id":1,`, status: 400, rpcCode: -32700},
		{name: "unparseable batch", body: `[{"jsonrpc":"2.0","id":1,"method":"ping"}`, status: 400, rpcCode: -32700},
		{name: "garbage", body: `hello`, status: 400, rpcCode: -32700},
		{name: "a string", body: `"ping"`, status: 400, rpcCode: -32600},
		{name: "a number", body: `42`, status: 400, rpcCode: -32600},
		{name: "null", body: `null`, status: 400, rpcCode: -32600},
		{name: "empty batch", body: `[]`, status: 400, rpcCode: -32600},
		{name: "no method", body: `{"jsonrpc":"2.0","id":3}`, status: 400, rpcCode: -32600},
		{name: "wrong jsonrpc", body: `{"jsonrpc":"1.0","id":3,"method":"ping"}`, status: 400, rpcCode: -32600},
		{name: "notification", body: `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`, status: 202, empty: true},
		{name: "unknown notification", body: `{"jsonrpc":"2.0","method":"notifications/whatever"}`, status: 202, empty: true},
		{name: "a client's response", body: `{"jsonrpc":"2.0","id":9,"result":{}}`, status: 202, empty: true},
		{name: "unknown method", body: `{"jsonrpc":"2.0","id":4,"method":"resources/list"}`, status: 200, rpcCode: -32601},
		{name: "server/discover", body: `{"jsonrpc":"2.0","id":5,"method":"server/discover","params":{}}`,
			headers: []string{"Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "server/discover"}, status: 200, rpcCode: -32601},
		{name: "ping", body: `{"jsonrpc":"2.0","id":"p","method":"ping"}`, status: 200},
		{name: "tools/call without a name", body: `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"arguments":{}}}`,
			status: 200, rpcCode: -32602},
		{name: "tools/call of an unknown tool", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"nope"}}`,
			status: 200, rpcCode: -32602},
		{name: "a self-answered tool with an argument it does not take",
			body:   `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"list_engines","arguments":{"tier":"pro"}}}`,
			status: 200, rpcCode: -32602},
		{name: "all-notification batch", body: `[{"jsonrpc":"2.0","method":"notifications/initialized"},` +
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}]`, status: 202, empty: true},
	}
	for _, rw := range rows {
		t.Run(rw.name, func(t *testing.T) {
			method, key := rw.method, rw.key
			if method == "" {
				method = http.MethodPost
			}
			switch key {
			case "":
				key = tb.key
			case "-":
				key = ""
			}
			r := tb.send(t, method, mcp.Path, key, rw.body, rw.headers...)
			require.Equal(t, rw.status, r.status, r.raw)
			require.True(t, strings.HasPrefix(r.header.Get(api.RequestIDHeader), "req_"), "every answer carries X-Request-Id")
			if rw.empty {
				require.Empty(t, r.raw)
				return
			}
			require.Equal(t, "application/json", r.header.Get("Content-Type"), r.raw)
			res := r.rpc(t)
			if rw.rpcCode == 0 {
				require.Nil(t, res.Error, r.raw)
				require.NotNil(t, res.Result, r.raw)
				return
			}
			require.NotNil(t, res.Error, r.raw)
			require.Equal(t, rw.rpcCode, res.Error.Code, r.raw)
			require.NotEmpty(t, res.Error.Message)
			if rw.code != "" {
				var data struct {
					HTTPStatus int    `json:"http_status"`
					Code       string `json:"code"`
				}
				require.NoError(t, json.Unmarshal(res.Error.Data, &data), r.raw)
				require.Equal(t, rw.code, data.Code)
				require.Equal(t, rw.status, data.HTTPStatus)
			}
			switch rw.status {
			case 405:
				require.Equal(t, "POST", r.header.Get("Allow"))
			case 401:
				require.Equal(t, `Bearer resource_metadata="`+tb.base+`/.well-known/oauth-protected-resource/mcp", `+
					`scope="`+strings.Join(core.AllScopes, " ")+`"`, r.header.Get("WWW-Authenticate"))
				require.Contains(t, res.Error.Message, "OAuth")
				require.Contains(t, res.Error.Message, "bearer token")
			}
		})
	}
}

// A caller that cannot be authenticated is refused before anything runs:
// no message of its request is dispatched, initialize included, whatever
// the body holds.
func TestUnauthenticatedRequestsDispatchNothing(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	bodies := []string{
		initialize,
		`[` + initialize + `,{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_engines"}}`,
		`not json`,
	}
	for _, body := range bodies {
		for _, key := range []string{"", "ccl_live_" + strings.Repeat("A", 43)} {
			r := tb.post(t, mcp.Path, key, body)
			require.Equal(t, http.StatusUnauthorized, r.status, r.raw)
			require.Equal(t, -32001, r.rpc(t).Error.Code)
		}
		r := tb.post(t, mcp.Path, tb.key, body, "Origin", "https://app.example")
		require.Equal(t, http.StatusForbidden, r.status, r.raw)
	}
	require.Empty(t, tb.methods(), "the spy saw a dispatch")
	// The same requests with a key are dispatched: the spy is listening.
	r := tb.post(t, mcp.Path, tb.key, initialize)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	require.Equal(t, []string{"initialize"}, tb.methods())
}

// initialize answers the version the client asked for when the server
// speaks it, the newest otherwise, and offers tools.
func TestInitializeNegotiatesTheVersion(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for asked, want := range map[string]string{
		"2025-11-25": "2025-11-25", "2025-06-18": "2025-06-18", "2025-03-26": "2025-03-26",
		"2024-11-05": "2025-11-25", "2026-07-28": "2025-11-25", "": "2025-11-25",
	} {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},`+
			`"clientInfo":{"name":"raw","version":"1"}}}`, asked)
		r := tb.post(t, mcp.Path, tb.key, body)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		var res struct {
			ProtocolVersion string                     `json:"protocolVersion"`
			Capabilities    map[string]json.RawMessage `json:"capabilities"`
			ServerInfo      struct{ Name string }      `json:"serverInfo"`
			Instructions    string                     `json:"instructions"`
		}
		require.NoError(t, json.Unmarshal(r.rpc(t).Result, &res), r.raw)
		require.Equal(t, want, res.ProtocolVersion, "asked %q", asked)
		require.Equal(t, map[string]json.RawMessage{"tools": json.RawMessage(`{}`)}, res.Capabilities)
		require.Equal(t, "conclave", res.ServerInfo.Name)
		require.Contains(t, res.Instructions, "judgement calls")
	}
}

// A fault while a message is served is -32603 "Internal error. Retry." in
// an HTTP 200, and the server goes on serving.
func TestFaultIsInternalError(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *setupOpts) {
		o.spy = func(method string) {
			if method == "tools/list" {
				panic("a fault in tools/list")
			}
		}
	})
	r := tb.post(t, mcp.Path, tb.key, `{"jsonrpc":"2.0","id":11,"method":"tools/list"}`)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	res := r.rpc(t)
	require.Equal(t, -32603, res.Error.Code)
	require.Equal(t, "Internal error. Retry.", res.Error.Message)
	require.JSONEq(t, `11`, string(res.ID))
	r = tb.post(t, mcp.Path, tb.key, `{"jsonrpc":"2.0","id":12,"method":"ping"}`)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	require.Nil(t, r.rpc(t).Error)
}

// A batch is answered element by element, in order, each answer with its
// request's id; notifications and clients' responses get none.
func TestBatchAnswersEveryRequestByID(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	body := `[` + initialize + `,
		{"jsonrpc":"2.0","method":"notifications/initialized"},
		{"jsonrpc":"2.0","id":"two","method":"nope/nope"},
		7,
		{"jsonrpc":"2.0","id":3,"method":"ping"},
		{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"missing"}}]`
	r := tb.post(t, mcp.Path, tb.key, body)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	var out []rpcResponse
	r.json(t, &out)
	require.Len(t, out, 5, r.raw)
	require.JSONEq(t, `1`, string(out[0].ID))
	require.Nil(t, out[0].Error)
	require.JSONEq(t, `"two"`, string(out[1].ID))
	require.Equal(t, -32601, out[1].Error.Code)
	require.JSONEq(t, `null`, string(out[2].ID))
	require.Equal(t, -32600, out[2].Error.Code)
	require.JSONEq(t, `3`, string(out[3].ID))
	require.Nil(t, out[3].Error)
	require.JSONEq(t, `4`, string(out[4].ID))
	require.Equal(t, -32602, out[4].Error.Code)
}

// The protected-resource document is served to anyone, at the resource's
// path and at the root, naming the resource exactly as configured.
func TestProtectedResourceMetadata(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		r := tb.send(t, http.MethodGet, path, "", "", "Accept", "*/*", "Mcp-Protocol-Version", "2025-11-25")
		require.Equal(t, http.StatusOK, r.status, r.raw)
		require.Equal(t, "application/json", r.header.Get("Content-Type"))
		var doc struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			ScopesSupported      []string `json:"scopes_supported"`
		}
		r.json(t, &doc)
		require.Equal(t, tb.base+"/mcp", doc.Resource)
		require.Equal(t, []string{issuer}, doc.AuthorizationServers)
		require.Equal(t, core.AllScopes, doc.ScopesSupported)
		require.NotContains(t, doc.ScopesSupported, "offline_access", "a refresh token is the authorization server's business")
		r = tb.post(t, path, "", "{}")
		require.Equal(t, http.StatusMethodNotAllowed, r.status)
	}
}
