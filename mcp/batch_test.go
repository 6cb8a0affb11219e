package mcp_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/mcp"
)

// batchRefusalData is the self-answered error shape of batch_too_large.
type batchRefusalData struct {
	HTTPStatus int `json:"http_status"`
	Error      struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Conclave map[string]any `json:"conclave"`
}

// requireBatchTooLarge checks that res refuses its request, id wantID, with
// batch_too_large in the self-answered shape whose conclave block names
// limit.
func requireBatchTooLarge(t *testing.T, res rpcResponse, wantID, limit string) {
	t.Helper()
	require.JSONEq(t, wantID, string(res.ID))
	require.NotNil(t, res.Error, "request %s was answered, not refused", wantID)
	require.Equal(t, -32000, res.Error.Code)
	var data batchRefusalData
	require.NoError(t, json.Unmarshal(res.Error.Data, &data))
	require.Equal(t, http.StatusRequestEntityTooLarge, data.HTTPStatus)
	require.Equal(t, "batch_too_large", data.Error.Code)
	require.Contains(t, data.Conclave, limit)
}

func pings(from, to int) []string {
	var elems []string
	for i := from; i <= to; i++ {
		elems = append(elems, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i))
	}
	return elems
}

// A batch runs its first 64 messages; every request past them is answered,
// with its own id, batch_too_large, and does not run; notifications past
// them get no answer.
func TestBatchRunsAtMost64Messages(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *setupOpts) { o.rpm = 100_000 })
	elems := pings(1, 70)
	elems = append(elems, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, `{"jsonrpc":"2.0","id":"last","method":"tools/list"}`)
	r := tb.post(t, mcp.Path, tb.key, "[\n"+strings.Join(elems, " ,\n ")+"\n]")
	require.Equal(t, http.StatusOK, r.status, r.raw)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	var out []rpcResponse
	r.json(t, &out)
	require.Len(t, out, 71, "every request is answered, the notification is not")
	for i, res := range out[:64] {
		require.JSONEq(t, fmt.Sprint(i+1), string(res.ID))
		require.Nil(t, res.Error, "ping %d is within the limit", i+1)
	}
	for i, res := range out[64:70] {
		requireBatchTooLarge(t, res, fmt.Sprint(65+i), "max_batch_messages")
	}
	requireBatchTooLarge(t, out[70], `"last"`, "max_batch_messages")
	dispatched := 0
	for _, m := range tb.methods() {
		if m == "ping" || m == "tools/list" {
			dispatched++
		}
	}
	require.Equal(t, 64, dispatched, "the messages past the limit do not run")

	// A batch of notifications alone past the limit still needs no answer.
	var notes []string
	for range 70 {
		notes = append(notes, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
	r = tb.post(t, mcp.Path, tb.key, "["+strings.Join(notes, ",")+"]")
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
	require.Empty(t, r.raw)
}

// Inside a batch the protocol messages are not free: each spends one
// request of the key's rate, as a tool call does. Alone, they stay free.
func TestBatchProtocolMessagesSpendTheRate(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *setupOpts) { o.rpm = 3 })
	r := tb.post(t, mcp.Path, tb.key, "["+strings.Join(pings(1, 12), ",")+"]")
	require.Equal(t, http.StatusOK, r.status, r.raw)
	var out []rpcResponse
	r.json(t, &out)
	require.Len(t, out, 12)
	answered, limited := 0, 0
	for _, res := range out {
		if res.Error == nil {
			answered++
			continue
		}
		var data struct {
			HTTPStatus int    `json:"http_status"`
			Code       string `json:"code"`
		}
		require.NoError(t, json.Unmarshal(res.Error.Data, &data), r.raw)
		require.Equal(t, http.StatusTooManyRequests, data.HTTPStatus)
		require.Equal(t, "rate_limit_exceeded", data.Code)
		limited++
	}
	require.LessOrEqual(t, answered, 3, "at most the key's rate of pings is answered: %s", r.raw)
	require.Equal(t, 12, answered+limited)
	require.Positive(t, limited)

	// A ping alone takes no admission step.
	r = tb.post(t, mcp.Path, tb.key, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	require.Equal(t, http.StatusTooManyRequests, r.status, "the key is known to be over its rate: %s", r.raw)
	other := tb.newKey(t, tb.org.ID)
	for i := range 6 {
		r = tb.post(t, mcp.Path, other, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i))
		require.Equal(t, http.StatusOK, r.status, r.raw)
		require.Nil(t, r.rpc(t).Error, r.raw)
	}
}

// Once a key's rate is spent, the calls of a batch are refused from the
// refused-until memory: no trip to the store per message, metered reads and
// admitted calls alike.
func TestBatchPastTheRateCostsNoStoreTrip(t *testing.T) {
	t.Parallel()
	var admits atomic.Int64
	tb := setup(t, func(o *setupOpts) { o.rpm, o.admits = 2, &admits })
	var elems []string
	for i := range 32 {
		elems = append(elems,
			fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"list_modes","arguments":{}}}`, 2*i),
			fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"estimate","arguments":{"model":"conclave-standard","messages":[{"role":"user","content":"Is it wise?"}]}}}`, 2*i+1))
	}
	body := "[" + strings.Join(elems, ",") + "]"
	r := tb.post(t, mcp.Path, tb.key, body)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	var out []rpcResponse
	r.json(t, &out)
	require.Len(t, out, 64)
	limited := 0
	for _, res := range out {
		require.Nil(t, res.Error, r.raw)
		var tr toolResult
		require.NoError(t, json.Unmarshal(res.Result, &tr))
		if tr.IsError && strings.Contains(tr.Content[0].Text, "rate_limit_exceeded") {
			limited++
		}
	}
	require.GreaterOrEqual(t, limited, 62, "the key's rate is 2: %s", r.raw)
	// The rate's two, then at most one trip for each message already past
	// the memory's check when the first refusal was recorded (8 run at once).
	trips := admits.Load()
	require.LessOrEqual(t, trips, int64(2+8), "a spent key's messages went to the store")

	// A second batch within the Retry-After finds the key known to be
	// spent when it authenticates: 429, no trip at all.
	r = tb.post(t, mcp.Path, tb.key, body)
	require.Equal(t, http.StatusTooManyRequests, r.status, r.raw)
	require.Equal(t, trips, admits.Load(), "a spent key's batch went to the store")
}

// Past the batch's answer budget, each further answer of a message that ran
// is replaced by a short batch_too_large; the answer stays a valid array
// answering every request in order.
func TestBatchAnswerBudget(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *setupOpts) { o.rpm, o.answerBytes = 100_000, 40_000 })
	var elems []string
	for i := 1; i <= 6; i++ {
		elems = append(elems, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, i))
	}
	r := tb.post(t, mcp.Path, tb.key, "["+strings.Join(elems, ",")+"]")
	require.Equal(t, http.StatusOK, r.status, r.raw)
	var out []rpcResponse
	r.json(t, &out)
	require.Len(t, out, 6)
	require.Nil(t, out[0].Error, "the first answer fits the budget")
	var list struct {
		Tools []json.RawMessage `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(out[0].Result, &list))
	require.NotEmpty(t, list.Tools)
	one := len(out[0].Result)
	fits := 40_000 / one
	for i, res := range out {
		if i < fits {
			require.Nil(t, res.Error, "answer %d fits the budget", i+1)
			continue
		}
		requireBatchTooLarge(t, res, fmt.Sprint(i+1), "max_batch_answer_bytes")
	}
	require.Less(t, len(r.raw), 40_000+6*600, "the answer passed its budget by more than its short refusals")
}

// A request id is a string or a number of at most 128 bytes as sent: every
// answer echoes it.
func TestLongRequestIDIsInvalid(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	long := strings.Repeat("x", 127)
	r := tb.post(t, mcp.Path, tb.key, `{"jsonrpc":"2.0","id":"`+long+`","method":"ping"}`)
	require.Equal(t, http.StatusBadRequest, r.status, r.raw)
	res := r.rpc(t)
	require.JSONEq(t, `null`, string(res.ID))
	require.Equal(t, -32600, res.Error.Code)
	require.Contains(t, res.Error.Message, "128 bytes")

	r = tb.post(t, mcp.Path, tb.key, `[{"jsonrpc":"2.0","id":"`+long[:126]+`","method":"ping"},{"jsonrpc":"2.0","id":`+strings.Repeat("9", 200)+`,"method":"ping"}]`)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	var out []rpcResponse
	r.json(t, &out)
	require.Len(t, out, 2)
	require.Nil(t, out[0].Error, "an id of 128 bytes with its quotes is valid")
	require.JSONEq(t, `null`, string(out[1].ID))
	require.Equal(t, -32600, out[1].Error.Code)
}

// A progressToken is a string of at most 128 bytes or an integer; anything
// else is -32602, answered as plain JSON even to a client that accepts an
// event stream.
func TestProgressTokenIsBounded(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	call := func(token string) *reply {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deliberate","arguments":{"model":"conclave-standard",` +
			`"messages":[{"role":"user","content":"hi"}]},"_meta":{"progressToken":` + token + `}}}`
		return tb.post(t, mcp.Path, tb.key, body)
	}
	for _, bad := range []string{`1.5`, `1e3`, `true`, `{"a":1}`, `[1]`, `"` + strings.Repeat("t", 129) + `"`, `123456789012345678901234567890`} {
		r := call(bad)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		require.Equal(t, "application/json", r.header.Get("Content-Type"), "token %s", bad)
		res := r.rpc(t)
		require.NotNil(t, res.Error, "token %s: %s", bad, r.raw)
		require.Equal(t, -32602, res.Error.Code, "token %s", bad)
		require.Contains(t, res.Error.Message, "progressToken")
	}
	// The limit itself is accepted, on every tool.
	res := tb.callToolMeta(t, tb.key, "list_engines", map[string]any{}, map[string]any{"progressToken": strings.Repeat("t", 128)})
	require.False(t, res.IsError)
	res = tb.callToolMeta(t, tb.key, "list_engines", map[string]any{}, map[string]any{"progressToken": -42})
	require.False(t, res.IsError)
}
