package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/pgstore"
)

// The official OpenAI Go client, with only the base URL changed, lists and
// retrieves modes and reads Conclave's errors.
func TestOpenAIClientListsAndRetrievesModes(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ctx := context.Background()
	client := openai.NewClient(
		option.WithBaseURL(tb.srv.URL+"/v1/"),
		option.WithAPIKey(tb.key),
		option.WithMaxRetries(0),
	)

	page, err := client.Models.List(ctx)
	require.NoError(t, err)
	require.Len(t, page.Data, 2)
	byID := map[string]openai.Model{}
	for _, m := range page.Data {
		require.Equal(t, "conclave", string(m.OwnedBy))
		require.Equal(t, "model", string(m.Object))
		byID[m.ID] = m
	}
	std, ok := byID["conclave-standard"]
	require.True(t, ok)
	require.Contains(t, byID, "conclave-max")

	// The conclave block rides along as an extra field.
	extra, ok := std.JSON.ExtraFields["conclave"]
	require.True(t, ok, "conclave block present")
	require.Contains(t, extra.Raw(), `"q_surcharge_by_depth":{"deep":0.15,"light":0.05,"medium":0.1}`)
	require.Contains(t, extra.Raw(), `"mode_key":"standard"`)

	got, err := client.Models.Get(ctx, "CNCL:MAXX")
	require.NoError(t, err)
	require.Equal(t, "conclave-max", got.ID)

	_, err = client.Models.Get(ctx, "gpt-4o")
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr), "got %v", err)
	require.Equal(t, 404, apiErr.StatusCode)
	require.Equal(t, "model_not_found", apiErr.Code)
	require.Equal(t, "invalid_request_error", apiErr.Type)
	require.Equal(t, "model", apiErr.Param)

	bad := openai.NewClient(option.WithBaseURL(tb.srv.URL+"/v1/"), option.WithAPIKey("sk-not-ours"), option.WithMaxRetries(0))
	_, err = bad.Models.List(ctx)
	require.True(t, errors.As(err, &apiErr))
	require.Equal(t, 401, apiErr.StatusCode)
	require.Equal(t, "invalid_api_key", apiErr.Code)
}

// unconfirmedKeys settles every call for real and then, for a call whose
// Idempotency-Key starts with prefix, reports that the settlement could not
// be confirmed, as the store does when the database goes away after the
// commit: the call is billed and answered 500 internal_error, and a retry
// with the same key must replay it, never bill it again.
type unconfirmedKeys struct {
	*pgstore.Store
	prefix string
}

func (s unconfirmedKeys) SettleCall(ctx context.Context, p *core.SettleCallParams) (*core.Balance, error) {
	bal, err := s.Store.SettleCall(ctx, p)
	if err != nil || !strings.HasPrefix(p.IdempotencyKey, s.prefix) {
		return bal, err
	}
	return nil, fmt.Errorf("settling hold %s: %w", p.HoldID, core.ErrOutcomeUnknown)
}

// requireChargedOnce checks from the store that the organisation paid for
// exactly runs calls: one receipt each, one call charge in the journal per
// receipt and none without one, and the balance moved by the sum of their
// bills and nothing else.
func (cb *chatBundle) requireChargedOnce(t *testing.T, runs int) {
	t.Helper()
	ctx := context.Background()
	rows, err := cb.store.Pool().Query(ctx, `SELECT r.request_id, r.billed_micros,
		(SELECT count(*) FROM postings p WHERE p.org_id = r.org_id AND p.kind = 'call_charge' AND p.memo = 'call ' || r.request_id)
		FROM receipts r WHERE r.org_id = $1`, cb.org.ID)
	require.NoError(t, err)
	var total core.Micros
	n := 0
	for rows.Next() {
		var id string
		var billed core.Micros
		var charges int
		require.NoError(t, rows.Scan(&id, &billed, &charges))
		require.Positive(t, billed, "call %s", id)
		require.Equal(t, 1, charges, "call %s is charged exactly once", id)
		total += billed
		n++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, runs, n, "receipts")
	charges, err := cb.countRows("SELECT count(*) FROM postings WHERE kind = 'call_charge' AND org_id = '" + cb.org.ID + "'")
	require.NoError(t, err)
	require.Equal(t, runs, charges, "no charge without a receipt")
	cb.requireBalanceMoved(t, core.TrialCredit, total)
}

// startBusy starts a slow deliberation under idemKey with a plain HTTP
// client and returns once its idempotency claim is in flight; its response
// arrives on the channel.
func (cb *chatBundle) startBusy(t *testing.T, question, idemKey string) <-chan *response {
	t.Helper()
	done := make(chan *response, 1)
	go func() {
		done <- cb.do(t, "POST", "/v1/chat/completions", cb.key, chatBody("conclave-standard", question, ""), "Idempotency-Key", idemKey)
	}()
	require.Eventually(t, func() bool {
		n, err := cb.countRows("SELECT count(*) FROM idempotency_keys WHERE key = '" + idemKey + "' AND state = 'in_flight'")
		return err == nil && n == 1
	}, 10*time.Second, 10*time.Millisecond)
	return done
}

// statuses records the status of every attempt the official client makes,
// its automatic retries included.
type statuses struct {
	mu   sync.Mutex
	seen []int
}

func (s *statuses) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if res != nil {
		s.mu.Lock()
		s.seen = append(s.seen, res.StatusCode)
		s.mu.Unlock()
	}
	return res, err
}

func (s *statuses) get() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

// Every refusal of a chat completion surfaces in the official Go client as
// its *openai.Error, carrying Conclave's status, code and type.
func TestOpenAIClientChatErrors(t *testing.T) {
	t.Parallel()
	// Without the repeat's wait, a repeat of a running call is answered
	// 409 at once.
	cb := setupChatWith(t, func(p *parts) { p.limits.RepeatWait = -1 })
	ctx := context.Background()
	busy := cb.startBusy(t, slowQuestion, "go-busy-1")

	client := func(key string) *openai.Client {
		c := openai.NewClient(option.WithBaseURL(cb.srv.URL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
		return &c
	}
	ask := func(model string) openai.ChatCompletionNewParams {
		return openai.ChatCompletionNewParams{Model: model,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Should we adopt trunk-based development?")}}
	}
	rich := cb.newKey(t, &core.CreateKeyParams{Ceiling: 50 * core.MicrosPerUSD}) // a ceiling above the balance
	other := cb.newKey(t, &core.CreateKeyParams{})
	limited := cb.newKey(t, &core.CreateKeyParams{RPM: 1})
	_, err := client(limited).Models.List(ctx)
	require.NoError(t, err, "the limited key's one request of the minute")

	cases := []struct {
		name    string
		call    func() error
		status  int
		code    core.Code
		typ     string
		waitFor bool // Retry-After is sent
	}{
		{"no messages", func() error {
			_, err := client(cb.key).Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "conclave-standard"})
			return err
		}, 400, core.CodeInvalidMessages, "invalid_request_error", false},
		{"estimate without a model", func() error {
			var out map[string]any
			return client(cb.key).Post(ctx, "estimate", map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}}}, &out)
		}, 400, core.CodeInvalidModel, "invalid_request_error", false},
		{"a key not ours", func() error {
			_, err := client("sk-not-ours").Chat.Completions.New(ctx, ask("conclave-standard"))
			return err
		}, 401, core.CodeInvalidAPIKey, "authentication_error", false},
		{"a ceiling above the balance", func() error {
			_, err := client(rich).Chat.Completions.New(ctx, ask("conclave-standard"))
			return err
		}, 402, core.CodeInsufficientBalance, "invalid_request_error", false},
		{"an unknown mode", func() error {
			_, err := client(cb.key).Chat.Completions.New(ctx, ask("gpt-4o"))
			return err
		}, 404, core.CodeModelNotFound, "invalid_request_error", false},
		{"a repeat of a running call", func() error {
			_, err := client(cb.key).Chat.Completions.New(ctx, ask("conclave-standard"), option.WithHeader("Idempotency-Key", "go-busy-1"))
			return err
		}, 409, core.CodeRequestInProgress, "invalid_request_error", true},
		{"another key's Idempotency-Key", func() error {
			_, err := client(other).Chat.Completions.New(ctx, ask("conclave-standard"), option.WithHeader("Idempotency-Key", "go-busy-1"))
			return err
		}, 422, core.CodeIdempotencyKeyReused, "invalid_request_error", false},
		{"over the key's rate", func() error {
			_, err := client(limited).Chat.Completions.New(ctx, ask("conclave-standard"))
			return err
		}, 429, core.CodeRateLimitExceeded, "rate_limit_error", true},
	}
	for _, tc := range cases {
		err := tc.call()
		var apiErr *openai.Error
		require.True(t, errors.As(err, &apiErr), "%s: got %v", tc.name, err)
		require.Equal(t, tc.status, apiErr.StatusCode, tc.name)
		require.Equal(t, string(tc.code), apiErr.Code, tc.name)
		require.Equal(t, tc.typ, apiErr.Type, tc.name)
		require.NotEmpty(t, apiErr.Message, tc.name)
		if tc.waitFor {
			wait, err := strconv.Atoi(apiErr.Response.Header.Get("Retry-After"))
			require.NoError(t, err, tc.name)
			require.Positive(t, wait, tc.name)
		}
	}

	r := <-busy
	require.Equal(t, 200, r.status, r.raw)
	cb.requireChargedOnce(t, 1) // the busy call alone
}

// The official Go client's automatic retries, with one Idempotency-Key per
// logical request, never bill twice: after a 500 internal_error from a
// settlement that could not be confirmed (the call was billed), and after
// a 409 request_in_progress while the first attempt is still deliberating,
// the retry gets the replay of the one call that ran and was charged.
func TestOpenAIClientRetriesNeverBillTwice(t *testing.T) {
	t.Parallel()
	// The repeat's wait is off so that the 409 reaches the client; the
	// mode's straggler deadline of 3 s puts its Retry-After, before any of
	// its deliberations has finished, at about two rounds of it.
	cb := setupChatWith(t, func(p *parts) {
		p.limits.RepeatWait = -1
		p.settlement = unconfirmedKeys{p.store, "unconfirmed-"}
	}, func(c *config.Config) { c.Modes[0].StragglerDeadline = 3 * time.Second })
	ctx := context.Background()
	var seen statuses
	client := openai.NewClient(option.WithBaseURL(cb.srv.URL+"/v1/"), option.WithAPIKey(cb.key), option.WithMiddleware(seen.middleware))
	ask := openai.ChatCompletionNewParams{Model: "conclave-standard",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(hardQuestion)}}

	var raw *http.Response
	res, err := client.Chat.Completions.New(ctx, ask, option.WithHeader("Idempotency-Key", "unconfirmed-go-1"), option.WithResponseInto(&raw))
	require.NoError(t, err)
	require.Equal(t, []int{500, 200}, seen.get(), "billed, unconfirmed, retried")
	require.Equal(t, "true", raw.Header.Get("Idempotent-Replayed"))
	require.Equal(t, true, panelOf(t, res)["replayed"], "the retry replays the billed answer")
	require.NotEmpty(t, res.Choices[0].Message.Content)
	cb.requireChargedOnce(t, 1)

	seen = statuses{}
	busy := cb.startBusy(t, slowQuestion, "go-dup-1")
	res, err = client.Chat.Completions.New(ctx, ask, option.WithHeader("Idempotency-Key", "go-dup-1"), option.WithResponseInto(&raw))
	require.NoError(t, err)
	got := seen.get()
	t.Logf("the duplicate's attempts: %v", got)
	require.Equal(t, 409, got[0], "the first attempt found the call deliberating")
	require.Equal(t, 200, got[len(got)-1])
	require.Equal(t, "true", raw.Header.Get("Idempotent-Replayed"))
	require.Equal(t, true, panelOf(t, res)["replayed"])
	first := <-busy
	require.Equal(t, 200, first.status, first.raw)
	require.Equal(t, first.body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"], res.Choices[0].Message.Content)
	cb.requireChargedOnce(t, 2)
}

// panelOf reads the panel block of a completion, which the official Go
// client keeps among its extra fields.
func panelOf(t *testing.T, res *openai.ChatCompletion) map[string]any {
	t.Helper()
	raw, ok := res.JSON.ExtraFields["panel"]
	require.True(t, ok, "the panel block rides along")
	var panel map[string]any
	require.NoError(t, json.Unmarshal([]byte(raw.Raw()), &panel))
	return panel
}
