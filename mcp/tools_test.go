package mcp_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/mcp"
)

// question is a judgement call the simulated panel deliberates on.
const question = "Should a five-person team adopt trunk-based development, or keep long-lived feature branches?"

func messages(q string) []map[string]string {
	return []map[string]string{{"role": "user", "content": q}}
}

// listedTool is a tool as tools/list describes it.
type listedTool struct {
	Name         string                     `json:"name"`
	Title        string                     `json:"title"`
	Description  string                     `json:"description"`
	InputSchema  map[string]json.RawMessage `json:"inputSchema"`
	OutputSchema map[string]json.RawMessage `json:"outputSchema"`
	Annotations  map[string]any             `json:"annotations"`
}

func (tb *testBundle) listTools(t testing.TB) []listedTool {
	t.Helper()
	r := tb.post(t, mcp.Path, tb.key, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	var out struct {
		Tools []listedTool `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(r.rpc(t).Result, &out), r.raw)
	return out.Tools
}

// allTools are the tools a server with every capability lists, in order.
var allTools = []string{"deliberate", "estimate", "list_modes", "get_receipt", "run_test", "certify_mode", "list_engines",
	"validate_mode", "ask_genie", "approve_quote", "genie_propose_mode", "save_mode", "list_mode"}

// tools/list describes every working tool, in a stable order, each with a
// title, an object input schema, an output schema and every annotation;
// deliberate carries the spec's guidance.
func TestToolsList(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tools := tb.listTools(t)
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
		require.NotEmpty(t, tl.Title, tl.Name)
		require.NotEmpty(t, tl.Description, tl.Name)
		require.JSONEq(t, `"object"`, string(tl.InputSchema["type"]), tl.Name)
		require.JSONEq(t, `"object"`, string(tl.OutputSchema["type"]), tl.Name)
		for _, hint := range []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
			require.Contains(t, tl.Annotations, hint, tl.Name)
		}
		require.Equal(t, false, tl.Annotations["destructiveHint"], tl.Name)
	}
	require.Equal(t, allTools, names)
	byName := map[string]listedTool{}
	for _, tl := range tools {
		byName[tl.Name] = tl
	}
	require.Equal(t, false, tools[0].Annotations["readOnlyHint"], "deliberate bills")
	require.Equal(t, true, tools[0].Annotations["openWorldHint"], "deliberate calls providers")
	for _, name := range []string{"estimate", "list_modes", "get_receipt", "list_engines", "validate_mode"} {
		require.Equal(t, true, byName[name].Annotations["readOnlyHint"], name)
		require.Equal(t, true, byName[name].Annotations["idempotentHint"], name)
	}
	for _, name := range []string{"save_mode", "list_mode"} {
		require.Equal(t, false, byName[name].Annotations["readOnlyHint"], "%s changes a mode", name)
		require.Equal(t, false, byName[name].Annotations["idempotentHint"], "%s answers a repeat otherwise", name)
		require.Equal(t, false, byName[name].Annotations["openWorldHint"], name)
	}
	for _, name := range []string{"run_test", "certify_mode"} {
		require.Equal(t, false, byName[name].Annotations["readOnlyHint"], "%s launches and bills", name)
		require.Equal(t, false, byName[name].Annotations["idempotentHint"], "%s launches again past the lapse of its derived key", name)
		require.Equal(t, false, byName[name].Annotations["openWorldHint"], name)
	}
	for _, phrase := range []string{"judgement calls", "lookups, syntax, formatting, conversions, arithmetic and verbatim reproduction"} {
		require.Contains(t, tools[0].Description, phrase)
	}
	require.Equal(t, tools, tb.listTools(t), "the list is stable")
}

// Each forwarding tool answers its REST endpoint's JSON, as structured
// content and as the same JSON in text; list_engines lists engines by
// family and tier, never their endpoints or credentials.
func TestToolsAnswerTheirEndpointsJSON(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	requireStructured := func(res toolResult) map[string]any {
		t.Helper()
		require.False(t, res.IsError, res.Content[0].Text)
		require.NotEmpty(t, res.StructuredContent)
		require.JSONEq(t, string(res.StructuredContent), res.Content[0].Text)
		var out map[string]any
		res.text(t, &out)
		return out
	}

	comp := requireStructured(tb.callTool(t, tb.key, "deliberate", map[string]any{"model": "conclave-standard", "messages": messages(question)}))
	require.Equal(t, "chat.completion", comp["object"])
	panel := comp["panel"].(map[string]any)
	requestID := panel["request_id"].(string)
	require.True(t, strings.HasPrefix(requestID, "req_"), requestID)
	require.Greater(t, panel["billed_usd"].(float64), 0.0)
	require.NotEmpty(t, comp["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"])

	est := requireStructured(tb.callTool(t, tb.key, "estimate", map[string]any{"model": "conclave-standard", "messages": messages(question)}))
	require.Equal(t, "conclave-standard", est["mode"])
	require.Contains(t, []any{"light", "medium", "deep"}, est["depth"])

	modes := requireStructured(tb.callTool(t, tb.key, "list_modes", nil))
	rest := tb.send(t, http.MethodGet, "/v1/models", tb.key, "")
	require.Equal(t, http.StatusOK, rest.status, rest.raw)
	var restModes map[string]any
	rest.json(t, &restModes)
	require.Equal(t, len(restModes["data"].([]any)), len(modes["data"].([]any)))
	for i, m := range modes["data"].([]any) {
		want := restModes["data"].([]any)[i].(map[string]any)
		got := m.(map[string]any)
		delete(want, "created")
		delete(got, "created")
		require.Equal(t, want, got)
	}

	rc := requireStructured(tb.callTool(t, tb.key, "get_receipt", map[string]any{"request_id": requestID, "include_transcript": true}))
	restRC := tb.send(t, http.MethodGet, "/v1/receipts/"+requestID+"?include_transcript=true", tb.key, "")
	require.Equal(t, http.StatusOK, restRC.status, restRC.raw)
	require.JSONEq(t, restRC.raw, tb.callTool(t, tb.key, "get_receipt", map[string]any{"request_id": requestID, "include_transcript": true}).Content[0].Text)
	require.Equal(t, true, rc["receipt_available"])

	engines := requireStructured(tb.callTool(t, tb.key, "list_engines", map[string]any{}))
	require.Equal(t, "pro", engines["tier"], "an API key may ask for every tier")
	list := engines["engines"].([]any)
	require.Len(t, list, len(tb.catalog.Engines()))
	for _, e := range list {
		entry := e.(map[string]any)
		require.ElementsMatch(t, []string{"id", "family", "max_tier", "tiers"}, keys(entry), "an engine shows nothing else")
		eng, ok := tb.catalog.Engine(entry["id"].(string))
		require.True(t, ok)
		require.Equal(t, eng.Family, entry["family"])
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A failed forwarding tool is a result with isError whose text is the REST
// status and error object, with the request id: the REST code comes back.
func TestForwardingToolFailures(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, tc := range []struct {
		tool   string
		args   map[string]any
		status int
		code   string
		param  any
	}{
		{"deliberate", map[string]any{"messages": messages(question)}, 400, "invalid_messages", "model"},
		{"estimate", map[string]any{"messages": messages(question)}, 400, "invalid_model", "model"},
		{"deliberate", map[string]any{"model": "conclave-standard"}, 400, "invalid_messages", "messages"},
		{"deliberate", map[string]any{"model": "conclave-standard", "messages": messages(question), "tier": "gold"}, 400, "invalid_tier", "tier"},
		{"deliberate", map[string]any{"model": "conclave-standard", "messages": messages(question), "max_cost_usd": -1}, 400,
			"invalid_max_cost_usd", "panel.max_cost_usd"},
		{"deliberate", map[string]any{"model": "no-such-mode", "messages": messages(question)}, 404, "model_not_found", "model"},
		{"get_receipt", map[string]any{}, 400, "missing_request_id", "request_id"},
		{"get_receipt", map[string]any{"request_id": "req_nope"}, 404, "receipt_not_found", "request_id"},
	} {
		t.Run(fmt.Sprintf("%s %s", tc.tool, tc.code), func(t *testing.T) {
			res := tb.callTool(t, tb.key, tc.tool, tc.args)
			require.True(t, res.IsError, res.Content[0].Text)
			require.Empty(t, res.StructuredContent)
			var body struct {
				HTTPStatus int            `json:"http_status"`
				Error      map[string]any `json:"error"`
				Conclave   struct {
					RequestID string `json:"request_id"`
				} `json:"conclave"`
			}
			res.text(t, &body)
			require.Equal(t, tc.status, body.HTTPStatus)
			require.Equal(t, tc.code, body.Error["code"])
			require.Equal(t, "invalid_request_error", body.Error["type"])
			require.NotEmpty(t, body.Error["message"])
			require.Equal(t, tc.param, body.Error["param"])
			require.True(t, strings.HasPrefix(body.Conclave.RequestID, "req_"), res.Content[0].Text)
		})
	}
}

// A self-answered tool's failure has its own shape: the status, the code
// and message, and the extra block (here the wait of a spent rate).
func TestSelfAnsweredFailureShape(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *setupOpts) { o.rpm = 1 })
	require.False(t, tb.callTool(t, tb.key, "list_engines", nil).IsError)
	res := tb.callTool(t, tb.key, "list_engines", nil)
	require.True(t, res.IsError, res.Content[0].Text)
	var body struct {
		HTTPStatus int               `json:"http_status"`
		Error      map[string]string `json:"error"`
		Conclave   map[string]any    `json:"conclave"`
	}
	res.text(t, &body)
	require.Equal(t, 429, body.HTTPStatus)
	require.Equal(t, "rate_limit_exceeded", body.Error["code"])
	require.NotEmpty(t, body.Error["message"])
	require.Greater(t, body.Conclave["retry_after_seconds"].(float64), 0.0)
}

// A batch runs at most 8 calls to self-answered tools; each call past the
// 8th does not run and gets an error with its own id and batch_too_large.
// Calls to forwarding tools and other messages do not count.
func TestBatchRunsAtMostEightSelfAnsweredCalls(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	var elems []string
	for i := 1; i <= 10; i++ {
		elems = append(elems, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"list_engines","arguments":{}}}`, i))
	}
	elems = append(elems, `{"jsonrpc":"2.0","id":"modes","method":"tools/call","params":{"name":"list_modes"}}`,
		`{"jsonrpc":"2.0","id":"ping","method":"ping"}`)
	r := tb.post(t, mcp.Path, tb.key, "["+strings.Join(elems, ",")+"]")
	require.Equal(t, http.StatusOK, r.status, r.raw)
	var out []rpcResponse
	r.json(t, &out)
	require.Len(t, out, 12, r.raw)
	for i, res := range out[:10] {
		require.JSONEq(t, fmt.Sprint(i+1), string(res.ID))
		if i < 8 {
			require.Nil(t, res.Error, r.raw)
			var tr toolResult
			require.NoError(t, json.Unmarshal(res.Result, &tr))
			require.False(t, tr.IsError)
			continue
		}
		require.NotNil(t, res.Error, r.raw)
		var data struct {
			HTTPStatus int               `json:"http_status"`
			Error      map[string]string `json:"error"`
		}
		require.NoError(t, json.Unmarshal(res.Error.Data, &data), r.raw)
		require.Equal(t, 413, data.HTTPStatus)
		require.Equal(t, "batch_too_large", data.Error["code"])
	}
	require.JSONEq(t, `"modes"`, string(out[10].ID))
	require.Nil(t, out[10].Error)
	require.JSONEq(t, `"ping"`, string(out[11].ID))
	require.Nil(t, out[11].Error)
}

// A client may name a call's idempotency key in _meta, as REST's
// Idempotency-Key header does: a repeat with it replays the stored answer;
// an empty one is refused as REST refuses an empty header.
func TestIdempotencyKeyInMeta(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	call := func(key string) toolResult {
		body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
			"name": "deliberate", "arguments": map[string]any{"model": "conclave-standard", "messages": messages(question)},
			"_meta": map[string]any{"conclave/idempotency-key": key}}})
		require.NoError(t, err)
		r := tb.post(t, mcp.Path, tb.key, string(body))
		var tr toolResult
		require.NoError(t, json.Unmarshal(r.rpc(t).Result, &tr), r.raw)
		return tr
	}
	first := call("order-42")
	require.False(t, first.IsError, first.Content[0].Text)
	var comp, again map[string]any
	first.text(t, &comp)
	repeat := call("order-42")
	require.False(t, repeat.IsError, repeat.Content[0].Text)
	repeat.text(t, &again)
	require.Equal(t, true, again["panel"].(map[string]any)["replayed"])
	require.Equal(t, comp["panel"].(map[string]any)["request_id"], again["panel"].(map[string]any)["request_id"])

	empty := call("")
	require.True(t, empty.IsError)
	require.Contains(t, empty.Content[0].Text, `"code":"invalid_request"`)
}
