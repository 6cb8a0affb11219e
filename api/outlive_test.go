package api_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/config"
)

// slowQuestion makes every engine call of a deliberation take 0.8 s (40 s
// of simulated time at the test's time scale), so a deliberation runs for
// several seconds.
const slowQuestion = hardQuestion + " [[sim: delay=40s]]"

// A client that gives up after one second does not stop its deliberation:
// the call runs to its end, is billed once and stored; a retry with the
// same Idempotency-Key gets 409 request_in_progress while it runs (the
// repeat's wait for the call is off here, so that it answers at once) and
// the replay after.
func TestDeliberationOutlivesItsCaller(t *testing.T) {
	t.Parallel()
	cb := setupChatWith(t, func(p *parts) { p.limits.RepeatWait = -1 })
	body := chatBody("conclave-standard", slowQuestion, "")
	req, err := http.NewRequest("POST", cb.srv.URL+"/v1/chat/completions", bytes.NewBufferString(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+cb.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "leaver-1")
	impatient := &http.Client{Timeout: time.Second}
	_, err = impatient.Do(req)
	require.Error(t, err, "the client gave up before the answer")

	r := cb.do(t, "POST", "/v1/chat/completions", cb.key, body, "Idempotency-Key", "leaver-1")
	requireError(t, r, 409, core.CodeRequestInProgress, "invalid_request_error")
	wait, err := strconv.Atoi(r.header.Get("Retry-After"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, wait, 1)

	var replay *response
	require.Eventually(t, func() bool {
		replay = cb.do(t, "POST", "/v1/chat/completions", cb.key, body, "Idempotency-Key", "leaver-1")
		return replay.status == 200
	}, 60*time.Second, 250*time.Millisecond)
	require.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
	panel := replay.body["panel"].(map[string]any)
	require.Equal(t, true, panel["replayed"])

	n, err := cb.countRows("SELECT count(*) FROM receipts WHERE org_id = '" + cb.org.ID + "'")
	require.NoError(t, err)
	require.Equal(t, 1, n, "one deliberation ran and was billed")
	var billed core.Micros
	require.NoError(t, cb.store.Pool().QueryRow(context.Background(),
		"SELECT billed_micros FROM receipts WHERE org_id = $1", cb.org.ID).Scan(&billed))
	require.Positive(t, billed)
	cb.requireBalanceMoved(t, core.TrialCredit, billed)
	require.Equal(t, panel["request_id"], receiptRequestID(t, cb), "the replay names the call that ran")
}

func receiptRequestID(t *testing.T, cb *chatBundle) string {
	t.Helper()
	var id string
	require.NoError(t, cb.store.Pool().QueryRow(context.Background(),
		"SELECT request_id FROM receipts WHERE org_id = $1", cb.org.ID).Scan(&id))
	return id
}

// The official OpenAI Go client, with its own automatic retries, sends a
// duplicate of a running deliberation and ends with its replay: the 409's
// Retry-After is the expected remaining time from the mode's recent
// deliberations, so its default two retries reach the stored answer (a
// fixed one-second Retry-After would spend both long before it ends). The
// repeat's wait for the call is off here: the retries do the waiting.
func TestOfficialClientRetriesReachTheReplay(t *testing.T) {
	t.Parallel()
	cb := setupChatWith(t, func(p *parts) { p.limits.RepeatWait = -1 },
		func(c *config.Config) { c.Limits.ConcurrencyRetryAfter = time.Second })
	// One deliberation teaches the service how long the mode takes.
	first := cb.do(t, "POST", "/v1/chat/completions", cb.key, chatBody("conclave-standard", slowQuestion, ""), "Idempotency-Key", "teach-1")
	require.Equal(t, 200, first.status, first.raw)

	body := chatBody("conclave-standard", slowQuestion+" Second.", "")
	done := make(chan *response, 1)
	go func() { done <- cb.do(t, "POST", "/v1/chat/completions", cb.key, body, "Idempotency-Key", "dup-1") }()
	require.Eventually(t, func() bool {
		n, err := cb.countRows("SELECT count(*) FROM idempotency_keys WHERE key = 'dup-1' AND state = 'in_flight'")
		return err == nil && n == 1
	}, 10*time.Second, 10*time.Millisecond)

	client := openai.NewClient(option.WithBaseURL(cb.srv.URL+"/v1/"), option.WithAPIKey(cb.key),
		option.WithHeader("Idempotency-Key", "dup-1"), option.WithRequestTimeout(90*time.Second))
	var raw *http.Response
	comp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "conclave-standard",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(slowQuestion + " Second.")},
	}, option.WithResponseInto(&raw))
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		t.Fatalf("the client's retries ended in %d %s", apiErr.StatusCode, apiErr.Code)
	}
	require.NoError(t, err)
	require.Equal(t, "true", raw.Header.Get("Idempotent-Replayed"))
	orig := <-done
	require.Equal(t, 200, orig.status, orig.raw)
	require.Equal(t, orig.body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"], comp.Choices[0].Message.Content)
	n, err := cb.countRows("SELECT count(*) FROM receipts WHERE org_id = '" + cb.org.ID + "'")
	require.NoError(t, err)
	require.Equal(t, 2, n, "the duplicate ran nothing")
}
