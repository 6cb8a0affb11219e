package api_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// Requests refused for their body spend the key's rate like any other: a
// key of 3 per minute gets its 400s and 413s for three requests, then 429
// with Retry-After, and from then on 429 before its body is looked at — a
// valid request as well.
func TestRefusedBodiesSpendTheRate(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *setupOpts) { o.cfg.MaxBodyBytes = 4096 })
	key := tb.newKey(t, &core.CreateKeyParams{RPM: 3})
	requireError(t, tb.do(t, "POST", "/v1/estimate", key, `{"model":`), 400, core.CodeInvalidJSON, "invalid_request_error")
	requireError(t, tb.do(t, "POST", "/v1/estimate", key, `{"messages":[]}`), 400, core.CodeInvalidModel, "invalid_request_error")
	requireError(t, tb.do(t, "POST", "/v1/estimate", key, `{"model":"`+strings.Repeat("a", 5000)+`"}`), 413, core.CodeRequestTooLarge, "invalid_request_error")
	for _, body := range []string{`{"model":`, `{"model":"conclave-standard","messages":[{"role":"user","content":"hi"}]}`} {
		r := tb.do(t, "POST", "/v1/estimate", key, body)
		requireError(t, r, 429, core.CodeRateLimitExceeded, "rate_limit_error")
		wait, err := strconv.Atoi(r.header.Get("Retry-After"))
		require.NoError(t, err)
		require.True(t, wait >= 1 && wait <= 20, "Retry-After %d", wait)
	}
	requireError(t, tb.do(t, "GET", "/v1/nowhere", key, ""), 429, core.CodeRateLimitExceeded, "rate_limit_error")
	require.Equal(t, 200, tb.do(t, "POST", "/v1/estimate", tb.key,
		`{"model":"conclave-standard","messages":[{"role":"user","content":"hi"}]}`).status, "another key has its own budget")
}

// cpuTime is this process's CPU time so far.
func processCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// A number read from a caller is bounded before it is parsed exactly: a
// 900,000-digit max_cost_usd and a huge exponent are refused at once with
// 400 invalid_max_cost_usd, costing the process little CPU (exact parsing
// took seconds). Not parallel: the CPU budget is the whole process's.
func TestHugeNumbersAreRefusedCheaply(t *testing.T) {
	tb := setupChat(t)
	key := tb.newKey(t, &core.CreateKeyParams{RPM: 1000})
	digits := "1" + strings.Repeat("0", 900_000)
	before := processCPU(t)
	for _, n := range []string{digits, "1e-1000000", "1e-1000000", "1e-1000000", "1e-1000000", "1e-1000000", "1e+999999", "0." + strings.Repeat("0", 100) + "1"} {
		r := tb.do(t, "POST", "/v1/chat/completions", key, chatBody("conclave-standard", "hi", `,"panel":{"max_cost_usd":`+n+`}`))
		requireError(t, r, 400, core.CodeInvalidMaxCostUSD, "invalid_request_error")
	}
	spent := processCPU(t) - before
	require.Less(t, spent, 400*time.Millisecond, "eight hostile numbers cost %v of CPU", spent)
}

// A replay is the API key's own: a key limited to conclave-standard, or a
// test key, that sends another key's Idempotency-Key gets 422
// idempotency_key_reused, never that key's stored conclave-max answer; the
// key that made the call still gets its replay.
func TestReplayBelongsToTheKeyThatRan(t *testing.T) {
	t.Parallel()
	cb := setupChat(t)
	body := chatBody("conclave-max", "What is 6 * 7?", "")
	first := cb.do(t, "POST", "/v1/chat/completions", cb.key, body, "Idempotency-Key", "max-1")
	require.Equal(t, 200, first.status, first.raw)
	answer := first.body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"].(string)

	narrow := cb.newKey(t, &core.CreateKeyParams{Modes: []string{"conclave-standard"}})
	test := cb.newKey(t, &core.CreateKeyParams{Test: true})
	for name, key := range map[string]string{"mode-limited": narrow, "test": test} {
		for _, model := range []string{"conclave-standard", "conclave-max"} {
			r := cb.do(t, "POST", "/v1/chat/completions", key, chatBody(model, "What is 6 * 7?", ""), "Idempotency-Key", "max-1")
			require.NotEqual(t, 200, r.status, "%s key, %s: %s", name, model, r.raw)
			require.NotContains(t, r.raw, answer, "%s key read another key's answer", name)
			switch {
			case name == "mode-limited" && model == "conclave-max":
				// A key limited to other modes may not use it (Authentication 3).
				requireError(t, r, 403, core.CodeModeNotAllowed, "permission_error")
			case r.status == 422:
				requireError(t, r, 422, core.CodeIdempotencyKeyReused, "invalid_request_error")
			}
		}
	}
	requireReplay(t, cb.do(t, "POST", "/v1/chat/completions", cb.key, body, "Idempotency-Key", "max-1"), first)
	cb.requireBalanceMoved(t, core.TrialCredit, billedMicros(t, first))
}

// Bad bytes are bad requests: a receipt id holding a NUL or invalid UTF-8
// is 404 receipt_not_found (not 503); messages[].content null is 400
// invalid_messages naming the field; a body that never finishes is 400
// invalid_json with a plain sentence, no socket address.
func TestBadBytesAreBadRequests(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, id := range []string{"req_%00abc", "req_%ff%fe", "req_" + strings.Repeat("x", 200)} {
		r := tb.do(t, "GET", "/v1/receipts/"+id, tb.key, "")
		requireError(t, r, 404, core.CodeReceiptNotFound, "invalid_request_error")
	}
	r := tb.do(t, "POST", "/v1/estimate", tb.key, `{"model":"conclave-standard","messages":[{"role":"user","content":null}]}`)
	requireError(t, r, 400, core.CodeInvalidMessages, "invalid_request_error")
	require.Equal(t, "messages[0].content", r.body["error"].(map[string]any)["param"])
	require.NotContains(t, tb.logs.String(), `"level":"ERROR"`, "no bad byte is an outage")

	// A server with a short read timeout, as deployed (server.read_timeout).
	slow := httptest.NewUnstartedServer(tb.srv.Config.Handler)
	slow.Config.ReadTimeout = 300 * time.Millisecond
	slow.Start()
	t.Cleanup(slow.Close)
	conn, err := net.Dial("tcp", slow.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /v1/estimate HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"model\":", tb.key)
	require.NoError(t, err)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer res.Body.Close()
	var b strings.Builder
	_, _ = bufio.NewReader(res.Body).WriteTo(&b)
	require.Equal(t, 400, res.StatusCode, b.String())
	require.Contains(t, b.String(), `"code":"invalid_json"`)
	require.NotContains(t, b.String(), "127.0.0.1")
	require.NotContains(t, b.String(), "i/o timeout")
}
