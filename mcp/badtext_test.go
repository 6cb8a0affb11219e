package mcp_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/mcp"
)

// A NUL or bytes that are not UTF-8 in a tool's argument that would reach
// a query is refused with the code REST answers for that field — the
// forwarding shape's http_status and param, or the self-answered shape —
// never a 5xx.
func TestBadTextInToolArgumentsIsA4xx(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	_, key := tb.newOrg(t, "Acme", "ACME")
	tb.succeed(t, key, "save_mode", map[string]any{"spec": panelSpec("Acme Review Panel", "PANL")}, &savedMode{})
	const nul = "\x00"
	msgs := messages(question)
	for _, tc := range []struct {
		tool   string
		args   map[string]any
		meta   map[string]any
		status int
		code   string
		param  any // forwarding tools only
	}{
		{"deliberate", map[string]any{"model": "conclave" + nul + "standard", "messages": msgs}, nil, 404, "model_not_found", "model"},
		{"deliberate", map[string]any{"model": "conclave-standard", "messages": msgs}, map[string]any{"conclave/idempotency-key": "a" + nul},
			400, "invalid_request", "Idempotency-Key"},
		{"estimate", map[string]any{"model": nul, "messages": msgs}, nil, 404, "model_not_found", "model"},
		{"run_test", map[string]any{"model": "acme-panl" + nul, "buckets": map[string]int{"light": 1}}, nil, 404, "model_not_found", "model"},
		{"certify_mode", map[string]any{"model": "ACME:PANL" + nul}, nil, 404, "model_not_found", "model"},
		{"run_test", map[string]any{"batch_id": nul}, nil, 404, "batch_not_found", "batch_id"},
		{"get_receipt", map[string]any{"request_id": "req_" + nul}, nil, 404, "receipt_not_found", "request_id"},
		{"validate_mode", map[string]any{"spec": panelSpec("Acme Two", "TWOO"), "mode_id": "acme-panl" + nul}, nil, 404, "mode_not_found", nil},
		{"save_mode", map[string]any{"spec": panelSpec("Acme Two", "TWOO"), "mode_id": nul}, nil, 404, "mode_not_found", nil},
		{"save_mode", map[string]any{"mode_id": "acme-panl" + nul, "release": true}, nil, 404, "mode_not_found", nil},
		{"list_mode", map[string]any{"mode_id": "acme-panl" + nul}, nil, 404, "mode_not_found", nil},
		{"save_mode", map[string]any{"spec": panelSpec("Acme"+nul+"Two", "TWOO")}, nil, 400, "invalid_value", nil},
		{"validate_mode", map[string]any{"spec": panelSpec("Acme Two", "TWOO"+nul)}, nil, 400, "invalid_value", nil},
	} {
		res := tb.callToolMeta(t, key, tc.tool, tc.args, tc.meta)
		require.True(t, res.IsError, "%s: %s", tc.tool, res.Content[0].Text)
		var body struct {
			HTTPStatus int            `json:"http_status"`
			Error      map[string]any `json:"error"`
		}
		res.text(t, &body)
		require.Equal(t, tc.status, body.HTTPStatus, "%s: %s", tc.tool, res.Content[0].Text)
		require.Equal(t, tc.code, body.Error["code"], "%s: %s", tc.tool, res.Content[0].Text)
		if tc.param != nil {
			require.Equal(t, tc.param, body.Error["param"], "%s: %s", tc.tool, res.Content[0].Text)
		}
	}

	// Bytes that are not UTF-8 in a spec, which the tool server passes on
	// as sent.
	spec, err := json.Marshal(panelSpec("Acme Two", "TWOO"))
	require.NoError(t, err)
	raw := strings.Replace(string(spec), "Three seats", "Three\xffseats", 1)
	r := tb.post(t, mcp.Path, key, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"save_mode","arguments":{"spec":`+raw+`}}}`)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	var out toolResult
	require.NoError(t, json.Unmarshal(r.rpc(t).Result, &out), r.raw)
	require.True(t, out.IsError, r.raw)
	var body selfAnswered
	out.text(t, &body)
	require.Equal(t, 400, body.HTTPStatus, r.raw)
	require.Equal(t, "invalid_value", body.Error.Code, r.raw)
	require.Contains(t, body.Error.Message, "spec.description")
}
