package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/mcp"
)

// slowQuestion makes every simulated model call of its deliberation take
// delay (the simulator at time scale 1), so that the deliberation lasts
// several steps of that length.
func slowQuestion(q, delay string) string { return q + " [[sim: delay=" + delay + "]]" }

// deliberateCall is a tools/call of deliberate, with a progress token when
// token is not "".
func deliberateCall(t testing.TB, q, token string) string {
	t.Helper()
	params := map[string]any{"name": "deliberate", "arguments": map[string]any{"model": "conclave-standard", "messages": messages(q)}}
	if token != "" {
		params["_meta"] = map[string]any{"progressToken": token}
	}
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
	require.NoError(t, err)
	return string(b)
}

// sseEvent is one server-sent event's data as a JSON-RPC message.
type sseEvent struct {
	Method string `json:"method"`
	Params struct {
		ProgressToken string `json:"progressToken"`
		Progress      int    `json:"progress"`
		Message       string `json:"message"`
	} `json:"params"`
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
}

// openStream posts body asking for an event stream and returns the
// response and a reader of its events.
func (tb *testBundle) openStream(t testing.TB, ctx context.Context, body string) (*http.Response, func() (*sseEvent, bool)) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tb.base+mcp.Path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tb.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	next := func() (*sseEvent, bool) {
		for sc.Scan() {
			line := sc.Text()
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				var ev sseEvent
				require.NoError(t, json.Unmarshal([]byte(data), &ev), data)
				return &ev, true
			}
		}
		return nil, false
	}
	return res, next
}

// A deliberate call with a progressToken, from a client that accepts an
// event stream, is answered on its POST with notifications/progress as the
// deliberation advances — classified, each round started, seats answered,
// judged, synthesising — then the result.
func TestDeliberateStreamsProgress(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *setupOpts) { o.timeScale = 1 })
	res, next := tb.openStream(t, context.Background(), deliberateCall(t, slowQuestion(question, "200ms"), "tok-7"))
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	var progress []string
	last := 0
	var final *sseEvent
	for {
		ev, ok := next()
		if !ok {
			break
		}
		if ev.Method == "notifications/progress" {
			require.Nil(t, final, "progress after the result")
			require.Equal(t, "tok-7", ev.Params.ProgressToken)
			require.Greater(t, ev.Params.Progress, last, "progress increases")
			last = ev.Params.Progress
			progress = append(progress, ev.Params.Message)
			continue
		}
		final = ev
	}
	require.NotNil(t, final, "the stream ends with the result")
	require.JSONEq(t, `1`, string(final.ID))
	var result toolResult
	require.NoError(t, json.Unmarshal(final.Result, &result))
	require.False(t, result.IsError, result.Content[0].Text)
	require.NotEmpty(t, result.StructuredContent)
	all := strings.Join(progress, "\n")
	for _, step := range []string{"Classified as a", "Round 1 started: 3 seats", "Round 1: seat-1 answered", "Round 1 judged", "Synthesising the answer."} {
		require.Contains(t, all, step)
	}
	require.True(t, strings.HasPrefix(progress[0], "Classified"), all)
	require.Equal(t, "Synthesising the answer.", progress[len(progress)-1], all)
}

// A step that takes longer than the progress interval (a slow seat) does
// not leave the stream silent: the last step is sent again, still
// advancing, so that a client's timeout keeps being reset.
func TestSlowStepsStillSendProgress(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *setupOpts) { o.timeScale, o.progressGap = 1, 100*time.Millisecond })
	res, next := tb.openStream(t, context.Background(), deliberateCall(t, slowQuestion(question, "600ms"), "slow"))
	defer res.Body.Close()
	still, last, results := 0, 0, 0
	for ev, ok := next(); ok; ev, ok = next() {
		if ev.Method != "notifications/progress" {
			results++
			continue
		}
		require.Greater(t, ev.Params.Progress, last)
		last = ev.Params.Progress
		if strings.HasSuffix(ev.Params.Message, "(still running)") {
			still++
		}
	}
	require.Equal(t, 1, results)
	require.GreaterOrEqual(t, still, 4, "a 600 ms step at a 100 ms interval repeats")
}

// Without an event stream in Accept, or without a progressToken, the same
// call is answered with plain JSON.
func TestDeliberateWithoutStreamIsPlainJSON(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, tc := range []struct{ token, accept string }{
		{"tok", "application/json"},
		{"", "application/json, text/event-stream"},
	} {
		r := tb.post(t, mcp.Path, tb.key, deliberateCall(t, question+" ("+tc.accept+tc.token+")", tc.token), "Accept", tc.accept)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		require.Equal(t, "application/json", r.header.Get("Content-Type"))
		var tr toolResult
		require.NoError(t, json.Unmarshal(r.rpc(t).Result, &tr), r.raw)
		require.False(t, tr.IsError, r.raw)
	}
}

// A client whose stream drops does not stop its deliberation: it runs on,
// is billed once and stored; a retry with the same arguments gets
// request_in_progress while it runs, then the replay, never a second bill.
func TestDroppedStreamKeepsIdempotency(t *testing.T) {
	t.Parallel()
	// The repeat's wait off: the retry finds the call running (409), as on
	// a replica other than the one running it.
	tb := setup(t, func(o *setupOpts) { o.timeScale = 1; o.repeatWait = -1 })
	ctx := context.Background()
	before, err := tb.store.GetBalance(ctx, tb.org.ID)
	require.NoError(t, err)
	q := slowQuestion(question, "700ms")

	tb.dropAfterFirstProgress(t, q)

	args := map[string]any{"model": "conclave-standard", "messages": messages(q)}
	retry := tb.callTool(t, tb.key, "deliberate", args)
	require.True(t, retry.IsError, retry.Content[0].Text)
	var refused struct {
		HTTPStatus int               `json:"http_status"`
		Error      map[string]string `json:"error"`
		Conclave   struct {
			RetryAfterSeconds int `json:"retry_after_seconds"`
		} `json:"conclave"`
	}
	retry.text(t, &refused)
	require.Equal(t, 409, refused.HTTPStatus)
	require.Equal(t, string(core.CodeRequestInProgress), refused.Error["code"])
	require.Positive(t, refused.Conclave.RetryAfterSeconds)

	var replay map[string]any
	require.Eventually(t, func() bool {
		r := tb.callTool(t, tb.key, "deliberate", args)
		if r.IsError {
			return false
		}
		r.text(t, &replay)
		return true
	}, time.Minute, 200*time.Millisecond)
	panel := replay["panel"].(map[string]any)
	require.Equal(t, true, panel["replayed"])
	billed := tb.billedOf(t, panel["request_id"])
	require.Positive(t, billed)
	after, err := tb.store.GetBalance(ctx, tb.org.ID)
	require.NoError(t, err)
	require.Equal(t, core.Micros(0), after.Held, "nothing is held any more")
	require.Equal(t, before.Balance-after.Balance, billed, "billed once")
}

// usd is a dollar amount read from JSON, in micro-dollars.
func usd(t testing.TB, v float64) core.Micros {
	t.Helper()
	m, err := core.ParseUSD(strconv.FormatFloat(v, 'f', -1, 64))
	require.NoError(t, err)
	return m
}

// With the repeat's wait on (the default), a retry after a dropped stream
// that reaches the replica still running the call waits for it and gets
// its replay at once, billed once.
func TestRetryAfterADroppedStreamWaitsForTheReplay(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *setupOpts) { o.timeScale = 1 })
	ctx := context.Background()
	before, err := tb.store.GetBalance(ctx, tb.org.ID)
	require.NoError(t, err)
	q := slowQuestion(question, "700ms")

	tb.dropAfterFirstProgress(t, q)

	retry := tb.callTool(t, tb.key, "deliberate", map[string]any{"model": "conclave-standard", "messages": messages(q)})
	require.False(t, retry.IsError, retry.Content[0].Text)
	var replay map[string]any
	retry.text(t, &replay)
	panel := replay["panel"].(map[string]any)
	require.Equal(t, true, panel["replayed"])
	billed := tb.billedOf(t, panel["request_id"])
	after, err := tb.store.GetBalance(ctx, tb.org.ID)
	require.NoError(t, err)
	require.Equal(t, before.Balance-after.Balance, billed, "billed once")
}

// dropAfterFirstProgress opens a deliberate call of q with progress and
// drops its stream once the first notification has arrived.
func (tb *testBundle) dropAfterFirstProgress(t *testing.T, q string) {
	t.Helper()
	ctx, drop := context.WithCancel(context.Background())
	defer drop()
	res, next := tb.openStream(t, ctx, deliberateCall(t, q, "drop-me"))
	ev, ok := next()
	require.True(t, ok)
	require.Equal(t, "notifications/progress", ev.Method)
	drop()
	res.Body.Close()
}

// billedOf is the bill of the call requestID, read through get_receipt.
func (tb *testBundle) billedOf(t *testing.T, requestID any) core.Micros {
	t.Helper()
	rc := tb.callTool(t, tb.key, "get_receipt", map[string]any{"request_id": requestID})
	require.False(t, rc.IsError, rc.Content[0].Text)
	var receipt struct {
		Receipt struct {
			BilledUSD float64 `json:"billed_usd"`
		} `json:"receipt"`
	}
	rc.text(t, &receipt)
	return usd(t, receipt.Receipt.BilledUSD)
}
