package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/api"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/mcp"
)

// receiptMiss is a tools/call that fails: get_receipt of a receipt that
// does not exist (404 receipt_not_found, in the forwarding shape).
const receiptMiss = `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_receipt","arguments":{"request_id":"req_nope"}}}`

// callRequestIDOf is the request id a failed forwarding tool's result
// names (conclave.request_id).
func callRequestIDOf(t *testing.T, result json.RawMessage) string {
	t.Helper()
	var res toolResult
	require.NoError(t, json.Unmarshal(result, &res), string(result))
	require.True(t, res.IsError, string(result))
	var body struct {
		Conclave struct {
			RequestID string `json:"request_id"`
		} `json:"conclave"`
	}
	res.text(t, &body)
	return body.Conclave.RequestID
}

// Every answer of the tool server carries X-Request-Id, REST's header, one
// id per HTTP request: on success, on a 401, on a tool's failure, on the
// protected-resource document. A request's one tool call runs under the
// request's id, so the header names its receipt; a batch's calls each run
// under an id of their own.
func TestEveryAnswerCarriesARequestID(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	seen := map[string]bool{}
	requestID := func(r *reply) string {
		t.Helper()
		id := r.header.Get(api.RequestIDHeader)
		require.True(t, strings.HasPrefix(id, "req_"), "X-Request-Id %q: %s", id, r.raw)
		require.False(t, seen[id], "one id per request: %s", id)
		seen[id] = true
		return id
	}

	ok := tb.post(t, mcp.Path, tb.key, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	require.Equal(t, http.StatusOK, ok.status, ok.raw)
	requestID(ok)

	unauthorized := tb.post(t, mcp.Path, "", initialize)
	require.Equal(t, http.StatusUnauthorized, unauthorized.status, unauthorized.raw)
	requestID(unauthorized)

	failed := tb.post(t, mcp.Path, tb.key, fmt.Sprintf(receiptMiss, 2))
	require.Equal(t, http.StatusOK, failed.status, failed.raw)
	id := requestID(failed)
	require.Equal(t, id, callRequestIDOf(t, failed.rpc(t).Result), "the request's one call runs under its id")

	requestID(tb.send(t, http.MethodGet, mcp.MetadataPath, "", ""))

	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "tools/call",
		"params": map[string]any{"name": "deliberate", "arguments": map[string]any{"model": "conclave-standard", "messages": messages(question)}}})
	require.NoError(t, err)
	deliberated := tb.post(t, mcp.Path, tb.key, string(body))
	require.Equal(t, http.StatusOK, deliberated.status, deliberated.raw)
	id = requestID(deliberated)
	var res toolResult
	require.NoError(t, json.Unmarshal(deliberated.rpc(t).Result, &res), deliberated.raw)
	require.False(t, res.IsError, deliberated.raw)
	var comp struct {
		Panel struct {
			RequestID string `json:"request_id"`
		} `json:"panel"`
	}
	res.text(t, &comp)
	require.Equal(t, id, comp.Panel.RequestID, "X-Request-Id names the call's receipt, as on REST")
	rc := tb.send(t, http.MethodGet, "/v1/receipts/"+id, tb.key, "")
	require.Equal(t, http.StatusOK, rc.status, rc.raw)

	batch := tb.post(t, mcp.Path, tb.key, "["+fmt.Sprintf(receiptMiss, 4)+","+fmt.Sprintf(receiptMiss, 5)+"]")
	require.Equal(t, http.StatusOK, batch.status, batch.raw)
	requestID(batch)
	var answers []rpcResponse
	batch.json(t, &answers)
	require.Len(t, answers, 2, batch.raw)
	for _, a := range answers {
		callID := callRequestIDOf(t, a.Result)
		require.True(t, strings.HasPrefix(callID, "req_"), callID)
		require.False(t, seen[callID], "each call of a batch has its own id, not the batch's")
		seen[callID] = true
	}
}

// Each request to the tool server is logged once, as REST's are: REST's
// fields, the key's id (never the key), the number of messages, their
// methods (a caller's odd method as "unknown") and the tools called (an
// unknown tool as "unknown"), with the code the answer carried.
func TestEachRequestIsLoggedOnce(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	secret, hash := core.NewKeySecret(false)
	key, err := tb.store.CreateKey(context.Background(), &core.CreateKeyParams{OrgID: tb.org.ID, Hash: hash, Hint: core.KeyHint(secret)})
	require.NoError(t, err)

	failed := tb.post(t, mcp.Path, secret, fmt.Sprintf(receiptMiss, 1))
	require.Equal(t, http.StatusOK, failed.status, failed.raw)
	line := tb.requestLine(t, failed.header.Get(api.RequestIDHeader))
	require.Equal(t, "INFO", line["level"])
	require.Equal(t, "POST", line["method"])
	require.Equal(t, "/mcp", line["route"])
	require.EqualValues(t, 200, line["status"])
	require.Equal(t, "receipt_not_found", line["code"], "a request's one call answers its code")
	require.Contains(t, line, "duration")
	require.Equal(t, tb.org.ID, line["org_id"])
	require.Equal(t, key.ID, line["key_id"])
	require.EqualValues(t, 1, line["batch_size"])
	require.Equal(t, []any{"tools/call"}, line["mcp_methods"])
	require.Equal(t, []any{"get_receipt"}, line["tools"])

	batch := tb.post(t, mcp.Path, secret, `[`+initialize+`,
		{"jsonrpc":"2.0","method":"notifications/initialized"},
		{"jsonrpc":"2.0","id":2,"method":"ping"},
		{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_engines"}},
		{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"no such tool"}},
		{"jsonrpc":"2.0","id":5,"method":"evil\nmethod {\"level\":\"ERROR\"}"},
		7]`)
	require.Equal(t, http.StatusOK, batch.status, batch.raw)
	line = tb.requestLine(t, batch.header.Get(api.RequestIDHeader))
	require.Equal(t, "ok", line["code"])
	require.EqualValues(t, 200, line["status"])
	require.EqualValues(t, 7, line["batch_size"])
	require.Equal(t, []any{"initialize", "notifications/initialized", "ping", "tools/call", "tools/call", "unknown"}, line["mcp_methods"])
	require.Equal(t, []any{"list_engines", "unknown"}, line["tools"])
	require.Equal(t, key.ID, line["key_id"])

	unauthorized := tb.post(t, mcp.Path, "", initialize)
	require.Equal(t, http.StatusUnauthorized, unauthorized.status, unauthorized.raw)
	line = tb.requestLine(t, unauthorized.header.Get(api.RequestIDHeader))
	require.EqualValues(t, 401, line["status"])
	require.Equal(t, "invalid_api_key", line["code"])
	require.EqualValues(t, 0, line["batch_size"], "no message is read before the caller is known")
	for _, absent := range []string{"org_id", "key_id", "mcp_methods", "tools"} {
		require.NotContains(t, line, absent)
	}

	logs := tb.logs.String()
	require.Equal(t, 1, strings.Count(logs, failed.header.Get(api.RequestIDHeader)), "one line per request")
	for _, s := range []string{secret, secret[len(core.LiveKeyPrefix):], "evil"} {
		require.NotContains(t, logs, s)
	}
}

// The tool server counts its requests in REST's HTTP series, shared on
// one registry with REST's, under route "/mcp" with the code its answer
// carried, and its refused callers in REST's auth failures; and each tool
// call that runs in the tool series, by tool and code, with its latency.
func TestMetricsCountRequestsAndToolCalls(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.callTool(t, tb.key, "list_engines", nil)
	tb.callTool(t, tb.key, "list_engines", nil)
	require.Equal(t, http.StatusOK, tb.post(t, mcp.Path, tb.key, fmt.Sprintf(receiptMiss, 1)).status)
	unknown := tb.post(t, mcp.Path, tb.key, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope"}}`)
	require.Equal(t, -32602, unknown.rpc(t).Error.Code, unknown.raw)
	estimate, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "tools/call",
		"params": map[string]any{"name": "estimate", "arguments": map[string]any{"model": "conclave-standard", "messages": messages(question)}}})
	require.NoError(t, err)
	batch := tb.post(t, mcp.Path, tb.key, `[`+string(estimate)+`,{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"list_modes"}}]`)
	require.Equal(t, http.StatusOK, batch.status, batch.raw)
	require.Equal(t, http.StatusUnauthorized, tb.post(t, mcp.Path, "", initialize).status)
	require.Equal(t, http.StatusOK, tb.send(t, http.MethodGet, "/v1/models", tb.key, "").status)

	tb.scrape(t,
		`conclave_mcp_tool_calls_total{code="ok",tool="list_engines"} 2`,
		`conclave_mcp_tool_calls_total{code="receipt_not_found",tool="get_receipt"} 1`,
		`conclave_mcp_tool_calls_total{code="invalid_params",tool="unknown"} 1`,
		`conclave_mcp_tool_calls_total{code="ok",tool="estimate"} 1`,
		`conclave_mcp_tool_calls_total{code="ok",tool="list_modes"} 1`,
		`conclave_mcp_tool_call_duration_seconds_count{tool="list_engines"} 2`,
		`conclave_mcp_tool_call_duration_seconds_count{tool="estimate"} 1`,
		`conclave_http_requests_total{code="ok",route="/mcp",status="200"} 3`,
		`conclave_http_requests_total{code="receipt_not_found",route="/mcp",status="200"} 1`,
		`conclave_http_requests_total{code="invalid_params",route="/mcp",status="200"} 1`,
		`conclave_http_requests_total{code="invalid_api_key",route="/mcp",status="401"} 1`,
		`conclave_http_requests_total{code="ok",route="/v1/models",status="200"} 1`,
		`conclave_http_request_duration_seconds_count{route="/mcp"} 6`,
		`conclave_auth_failures_total{code="invalid_api_key"} 1`,
	)
}

// requestLine is the fields of the log line "request" of the request id.
// It waits for the line: a request is logged just after its answer is sent.
func (tb *testBundle) requestLine(t *testing.T, id string) map[string]any {
	t.Helper()
	require.NotEmpty(t, id)
	var line map[string]any
	require.Eventually(t, func() bool {
		for _, l := range strings.Split(tb.logs.String(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "request" && m["request_id"] == id {
				line = m
				return true
			}
		}
		return false
	}, 5*time.Second, 10*time.Millisecond, "no request line for %s:\n%s", id, tb.logs)
	return line
}

// scrape reads the bundle's registry, as the operator listener's /metrics
// serves it, until it has every line of want, each a whole line: a
// request's metrics are recorded just after its answer is sent.
func (tb *testBundle) scrape(t *testing.T, want ...string) string {
	t.Helper()
	var body string
	require.Eventually(t, func() bool {
		rec := httptest.NewRecorder()
		promhttp.HandlerFor(tb.reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		body = rec.Body.String()
		for _, w := range want {
			if !strings.Contains(body, w+"\n") {
				return false
			}
		}
		return true
	}, 5*time.Second, 10*time.Millisecond, "want %q", want)
	return body
}
