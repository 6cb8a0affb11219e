package sim

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// finishWords are each format's words for stop, length and content_filter.
var finishWords = map[string][3]string{
	"openai":    {"stop", "length", "content_filter"},
	"anthropic": {"end_turn", "max_tokens", "refusal"},
	"gemini":    {"STOP", "MAX_TOKENS", "SAFETY"},
	"bedrock":   {"end_turn", "max_tokens", "content_filtered"},
}

func TestFormatsAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{TimeScale: 0.01})
	for _, f := range formats {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			a := b.do(t, ask{format: f, model: "atlas", system: "Be brief.", user: "What is 17 * 23?"})
			require.Equal(t, http.StatusOK, a.status, "%s", a.body)
			require.Contains(t, a.text, "391")
			require.Equal(t, finishWords[f][0], a.finish)
			require.Equal(t, TokenCount("Be brief."+"What is 17 * 23?"), a.inTokens)
			require.Equal(t, TokenCount(a.text), a.outTokens)
			ms, err := strconv.ParseFloat(a.header.Get("X-Sim-Latency-Ms"), 64)
			require.NoError(t, err)
			require.True(t, ms >= 50 && ms <= 600, "quick profile latency %v ms", ms)
		})
	}
}

func TestFormatsErrorDirectives(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	// want is the status and error type each format answers with.
	type want struct {
		status  int
		errType string
	}
	cases := map[string]map[string]want{
		"rate_limited": {
			"openai": {429, "rate_limit_exceeded"}, "anthropic": {429, "rate_limit_error"},
			"gemini": {429, "RESOURCE_EXHAUSTED"}, "bedrock": {429, "ThrottlingException"},
		},
		"overloaded": {
			"openai": {503, "overloaded"}, "anthropic": {529, "overloaded_error"},
			"gemini": {503, "UNAVAILABLE"}, "bedrock": {503, "ServiceUnavailableException"},
		},
		"timeout_response": {
			"openai": {504, "timeout"}, "anthropic": {504, "timeout_error"},
			"gemini": {504, "DEADLINE_EXCEEDED"}, "bedrock": {408, "ModelTimeoutException"},
		},
		"context_too_long": {
			"openai": {400, "context_length_exceeded"}, "anthropic": {400, "invalid_request_error"},
			"gemini": {400, "INVALID_ARGUMENT"}, "bedrock": {400, "ValidationException"},
		},
		"auth_refused": {
			"openai": {401, "invalid_api_key"}, "anthropic": {401, "authentication_error"},
			"gemini": {403, "PERMISSION_DENIED"}, "bedrock": {403, "AccessDeniedException"},
		},
		"bad_request": {
			"openai": {400, "invalid_request"}, "anthropic": {400, "invalid_request_error"},
			"gemini": {400, "INVALID_ARGUMENT"}, "bedrock": {400, "ValidationException"},
		},
	}
	for class, byFormat := range cases {
		for f, w := range byFormat {
			t.Run(class+"/"+f, func(t *testing.T) {
				t.Parallel()
				a := b.do(t, ask{format: f, model: "sonnet", user: "Hello? [[sim: error=" + class + "]]"})
				require.Equal(t, w.status, a.status, "%s", a.body)
				require.True(t, a.valid, "%s", a.body)
				require.Equal(t, w.errType, a.errType, "%s", a.body)
				require.NotEmpty(t, a.errMsg)
				if class == "context_too_long" {
					msg := strings.ToLower(a.errMsg)
					require.True(t, strings.Contains(msg, "too long") || strings.Contains(msg, "maximum"), a.errMsg)
				}
				if class == "rate_limited" {
					require.NotEmpty(t, a.header.Get("Retry-After"))
				}
			})
		}
	}
}

func TestFormatsMalformed(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{TimeScale: 0.01})
	t.Run("formats", func(t *testing.T) {
		for _, f := range formats {
			t.Run(f, func(t *testing.T) {
				t.Parallel()
				a := b.do(t, ask{format: f, model: "swift", user: "Tell me a story. [[sim: malformed]]"})
				require.Equal(t, http.StatusOK, a.status)
				require.False(t, a.valid, "the body must not parse: %s", a.body)
				require.NotEmpty(t, a.body)
			})
		}
	})
	waitFor(t, "four malformed calls are counted", func() bool { return b.srv.Stats().Count("swift", OutcomeMalformed) == 4 })
}

func TestFormatsTimeoutHangsUntilTheClientGivesUp(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	t.Run("formats", func(t *testing.T) {
		for _, f := range formats {
			t.Run(f, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
				defer cancel()
				start := time.Now()
				_, err := b.client.Do(b.request(t, ctx, ask{format: f, model: "opus", user: "Anyone there? [[sim: error=timeout]]"}))
				require.Error(t, err)
				require.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
				require.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)
			})
		}
	})
	waitFor(t, "four timeouts are counted and nothing is in flight", func() bool {
		st := b.srv.Stats()
		return st.Count("opus", OutcomeTimeout) == 4 && st.InFlight == 0
	})
}

func TestFormatsFinishAndLength(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{TimeScale: 0.01})
	for _, f := range formats {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			q := "Should we adopt a four-day week?"
			full := b.do(t, ask{format: f, model: "opus", user: q})
			require.Equal(t, finishWords[f][0], full.finish)
			require.Greater(t, full.outTokens, 20)

			cut := b.do(t, ask{format: f, model: "opus", user: q + " [[sim: finish=length]]"})
			require.Equal(t, finishWords[f][1], cut.finish)
			require.Equal(t, TokenCount(cut.text), cut.outTokens)
			require.Less(t, cut.outTokens, full.outTokens)

			filtered := b.do(t, ask{format: f, model: "opus", user: q + " [[sim: finish=content_filter]]"})
			require.Equal(t, http.StatusOK, filtered.status)
			require.Equal(t, finishWords[f][2], filtered.finish)
			require.Empty(t, filtered.text)
			require.Zero(t, filtered.outTokens)

			exact := b.do(t, ask{format: f, model: "opus", user: q + " [[sim: tokens_out=321]]"})
			require.Equal(t, 321, exact.outTokens)
			require.Equal(t, 321, TokenCount(exact.text))

			capped := b.do(t, ask{format: f, model: "opus", user: q, maxTokens: 7})
			require.Equal(t, finishWords[f][1], capped.finish)
			require.Equal(t, 7, capped.outTokens)
			require.True(t, strings.HasPrefix(full.text, capped.text), "a cut answer is a prefix of the whole")

			forced := b.do(t, ask{format: f, model: "opus", user: "Anything [[sim: answer=Forty-two, obviously.]]"})
			require.Equal(t, "Forty-two, obviously.", forced.text)
		})
	}
}

func TestRequestValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	post := func(path string, hdr map[string]string, body string) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, b.srv.URL()+path, strings.NewReader(body))
		require.NoError(t, err)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		res, err := b.client.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		var raw json.RawMessage
		require.NoError(t, json.NewDecoder(res.Body).Decode(&raw))
		return res.StatusCode, string(raw)
	}
	bearer := map[string]string{"Authorization": "Bearer k"}
	status, body := post("/openai/v1/chat/completions", bearer, `{"model":"atlas","messages":[]}`)
	require.Equal(t, 400, status, body)
	status, body = post("/openai/v1/chat/completions", bearer, `{"model":"atlas",`)
	require.Equal(t, 400, status, body)
	status, body = post("/openai/v1/chat/completions", bearer, `{"model":"atlas","messages":[{"role":"user","content":"hi"}],"stream":true}`)
	require.Equal(t, 400, status, body)
	status, body = post("/openai/v1/chat/completions", bearer, `{"model":"atlas","messages":[{"role":"user","content":[{"type":"text","text":"What is 2+2?"}]}]}`)
	require.Equal(t, 200, status, body)
	require.Contains(t, body, "4")
	status, body = post("/anthropic/v1/messages", map[string]string{"X-Api-Key": "k"}, `{"model":"sonnet","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, 400, status, body)
	require.Contains(t, body, "anthropic-version")
	status, body = post("/anthropic/v1/messages", map[string]string{"X-Api-Key": "k", "Anthropic-Version": "2023-06-01"}, `{"model":"sonnet","messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, 400, status, body)
	require.Contains(t, body, "max_tokens")
	status, body = post("/gemini/v1beta/models/gemini-pro:streamGenerateContent", map[string]string{"X-Goog-Api-Key": "k"}, `{"contents":[{"parts":[{"text":"hi"}]}]}`)
	require.Equal(t, 400, status, body)
	status, body = post("/openai/v1/chat/completions", bearer, `{"model":"atlas","messages":[{"role":"user","content":"hi [[sim: error=on_fire]]"}]}`)
	require.Equal(t, 400, status, body)
	require.Contains(t, body, "on_fire")
	status, body = post("/nowhere", nil, `{}`)
	require.Equal(t, 404, status, body)
}

func TestContextWindow(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{TimeScale: 0.01, Engines: map[string]EngineProfile{"sim/swift": {ContextTokens: 10}}})
	a := b.do(t, ask{format: "openai", model: "swift", user: strings.Repeat("word ", 20)})
	require.Equal(t, http.StatusBadRequest, a.status)
	require.Equal(t, "context_length_exceeded", a.errType)
	require.Contains(t, a.errMsg, "maximum context length is 10 tokens")
	a = b.do(t, ask{format: "openai", model: "swift", user: "short"})
	require.Equal(t, http.StatusOK, a.status)
}
