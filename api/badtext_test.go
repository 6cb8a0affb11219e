package api_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// badText is one request whose caller string holds what PostgreSQL cannot
// keep as text, and the refusal it must get.
type badText struct {
	name, method, path, body string
	headers                  []string
	status                   int
	code                     core.Code
	param                    string
}

// requireBadText sends each request and requires its 4xx: the field's own
// code naming the param, never a 5xx, and nothing logged as an outage.
func requireBadText(t *testing.T, tb *testBundle, key string, cases []badText) {
	t.Helper()
	for _, c := range cases {
		r := tb.do(t, c.method, c.path, key, c.body, c.headers...)
		require.Less(t, r.status, 500, "%s: %s", c.name, r.raw)
		require.Equal(t, c.status, r.status, "%s: %s", c.name, r.raw)
		requireError(t, r, c.status, c.code, "invalid_request_error")
		require.Equal(t, c.param, r.body["error"].(map[string]any)["param"], "%s: %s", c.name, r.raw)
	}
	if tb.logs != nil {
		require.NotContains(t, tb.logs.String(), `"level":"ERROR"`, "no bad byte is an outage")
	}
}

// A NUL (\u0000 in JSON, %00 in a URL) or bytes that are not UTF-8 in any
// caller string that would reach a query are a 4xx with the field's code:
// model_not_found for a model (no mode has such a name), mode_not_found
// for a mode, invalid_value for a spec or an organisation's ticker,
// receipt_not_found and batch_not_found for ids, invalid_request for an
// Idempotency-Key. A NUL in a message's content reaches no query, and is
// answered.
func TestBadTextInCallerStringsIsA4xx(t *testing.T) {
	t.Parallel()
	cb := setupChat(t)
	const nul = `\u0000`
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	model := func(m string) string { return `{"model":"` + m + `",` + msgs + `}` }
	requireBadText(t, cb.testBundle, cb.key, []badText{
		{"chat model", "POST", "/v1/chat/completions", model("conclave" + nul + "standard"), nil, 404, core.CodeModelNotFound, "model"},
		{"chat model, suffix", "POST", "/v1/chat/completions", model("acme-panl@v1" + nul), nil, 404, core.CodeModelNotFound, "model"},
		{"chat model, not UTF-8", "POST", "/v1/chat/completions", model("conclave-\xffstandard"), nil, 404, core.CodeModelNotFound, "model"},
		{"chat key", "POST", "/v1/chat/completions", model("conclave-standard"), []string{"Idempotency-Key", "k\xff"},
			400, core.CodeInvalidRequest, "Idempotency-Key"},
		{"estimate model", "POST", "/v1/estimate", model("conclave-standard" + nul), nil, 404, core.CodeModelNotFound, "model"},
		{"model path", "GET", "/v1/models/conclave%00standard", "", nil, 404, core.CodeModelNotFound, "model"},
		{"model path, not UTF-8", "GET", "/v1/models/conclave%ffstandard", "", nil, 404, core.CodeModelNotFound, "model"},
		{"test model", "POST", "/v1/tests", `{"model":"conclave` + nul + `standard","buckets":{"light":1}}`, nil,
			404, core.CodeModelNotFound, "model"},
		{"test key", "POST", "/v1/tests", `{"model":"conclave-standard","buckets":{"light":1}}`, []string{"Idempotency-Key", "\xff"},
			400, core.CodeInvalidRequest, "Idempotency-Key"},
		{"certify model", "POST", "/v1/certify", `{"model":"` + nul + `"}`, nil, 404, core.CodeModelNotFound, "model"},
		{"test batch", "GET", "/v1/tests?batch_id=%00", "", nil, 404, core.CodeBatchNotFound, "batch_id"},
		{"certify batch", "DELETE", "/v1/certify?batch_id=%ff", "", nil, 404, core.CodeBatchNotFound, "batch_id"},
		{"receipt", "GET", "/v1/receipts/req_%00", "", nil, 404, core.CodeReceiptNotFound, "request_id"},
	})
	r := cb.do(t, "POST", "/v1/estimate", cb.key, `{"model":"conclave-standard","messages":[{"role":"user","content":"h`+nul+`i"}]}`)
	require.Equal(t, 200, r.status, r.raw)

	// A NUL in a header never reaches a handler: the HTTP server refuses
	// the request.
	conn, err := net.Dial("tcp", strings.TrimPrefix(cb.srv.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	body := model("conclave-standard")
	_, err = fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nIdempotency-Key: a\x00b\r\nContent-Length: %d\r\n\r\n%s", cb.key, len(body), body)
	require.NoError(t, err)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 400, res.StatusCode)
}

// The same for mode authoring: a mode named in the path or in mode_id, an
// organisation's ticker, and a spec — a NUL in any of its strings (its
// name included, even kept invalid) or bytes that are not UTF-8.
func TestBadTextInModeAuthoringIsA4xx(t *testing.T) {
	t.Parallel()
	ab := setupAuthoring(t)
	ab.savePanel(t)
	ab.release(t, 200, "")
	spec := func(name, ticker string, edits ...func(map[string]any)) string {
		return jsonOf(t, panelSpec(name, ticker, edits...))
	}
	const nul = `\u0000`
	requireBadText(t, ab.testBundle, ab.key, []badText{
		{"validate mode_id", "POST", "/v1/modes/validate", `{"spec":` + spec("Acme Two", "TWOO") + `,"mode_id":"acme-panl` + nul + `"}`, nil,
			404, core.CodeModeNotFound, "mode_id"},
		{"save mode_id", "POST", "/v1/modes", `{"spec":` + spec("Acme Two", "TWOO") + `,"mode_id":"` + nul + `"}`, nil,
			404, core.CodeModeNotFound, "mode_id"},
		{"read", "GET", "/v1/modes/acme-panl%00", "", nil, 404, core.CodeModeNotFound, "mode"},
		{"read, not UTF-8", "GET", "/v1/modes/acme%ff", "", nil, 404, core.CodeModeNotFound, "mode"},
		{"release", "POST", "/v1/modes/%00/release", "", nil, 404, core.CodeModeNotFound, "mode"},
		{"listing", "POST", "/v1/modes/ACME:PANL%00/listing", "", nil, 404, core.CodeModeNotFound, "mode"},
		{"invite mode", "PUT", "/v1/modes/%00/lab_invites/BETA", "", nil, 404, core.CodeModeNotFound, "mode"},
		{"invite org", "PUT", "/v1/modes/acme-panl/lab_invites/BE%00A", "", nil, 400, core.CodeInvalidValue, "org"},
		{"spec name kept invalid", "POST", "/v1/modes", `{"spec":` + strings.Replace(spec("Acme Two", "TWOO", cheap), "Acme Two", `Acme`+nul+`Two`, 1) +
			`,"keep_invalid":true}`, nil, 400, core.CodeInvalidValue, "spec.name"},
		{"spec field", "POST", "/v1/modes/validate", `{"spec":` + spec("Acme Two", "TWOO", func(s map[string]any) {
			s["staff"].(map[string]any)["judge"].(map[string]any)["engine"] = "sim/\x00sonnet"
		}) + `}`, nil, 400, core.CodeInvalidValue, "spec.staff.judge.engine"},
		{"spec key", "POST", "/v1/modes", `{"spec":{"name":"Acme Two","ticker":"TWOO","x` + nul + `":1},"keep_invalid":true}`, nil,
			400, core.CodeInvalidValue, "spec.x\x00"},
		{"spec not UTF-8", "POST", "/v1/modes", `{"spec":` + strings.Replace(spec("Acme Two", "TWOO"), "Three seats", "Three\xffseats", 1) +
			`,"keep_invalid":true}`, nil, 400, core.CodeInvalidValue, "spec.description"},
		{"spec array", "POST", "/v1/modes", `{"spec":` + spec("Acme Two", "TWOO", func(s map[string]any) {
			s["seats_by_tier"].(map[string]any)["plus"].([]any)[1].(map[string]any)["backup"] = "\x00"
		}) + `}`, nil, 400, core.CodeInvalidValue, "spec.seats_by_tier.plus[1].backup"},
	})
	r := ab.do(t, "GET", "/v1/modes", ab.key, "")
	require.Equal(t, 200, r.status, r.raw)
	require.Len(t, r.body["data"], 1, "nothing was saved")
}
