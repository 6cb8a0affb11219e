package ollama_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/adapters/example/ollama"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/egress"
	"github.com/conclavehq/conclave/plugins/egress/creds"
)

// standIn is a loopback stand-in for an Ollama server: it answers POST
// /api/chat in the native format, and records what it was sent. Each
// request is answered by the next reply in line; the last one repeats.
type standIn struct {
	*httptest.Server

	mu       sync.Mutex
	replies  []reply
	received []received
}

type reply struct {
	status int
	body   string
}

// received is one request as the stand-in saw it.
type received struct {
	Method, Path, ContentType, Authorization string
	Body                                     chatBody
}

// chatBody is an /api/chat request, decoded strictly enough to catch a
// field the adapter should not send.
type chatBody struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Stream  *bool  `json:"stream"`
	Format  string `json:"format"`
	Options *struct {
		Temperature *float64 `json:"temperature"`
		NumPredict  int      `json:"num_predict"`
	} `json:"options"`
}

func newStandIn(t *testing.T, replies ...reply) *standIn {
	t.Helper()
	s := &standIn{replies: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := received{Method: r.Method, Path: r.URL.Path, ContentType: r.Header.Get("Content-Type"), Authorization: r.Header.Get("Authorization")}
		b, _ := io.ReadAll(r.Body)
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rec.Body); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":"`+err.Error()+`"}`)
			return
		}
		s.mu.Lock()
		s.received = append(s.received, rec)
		next := s.replies[0]
		if len(s.replies) > 1 {
			s.replies = s.replies[1:]
		}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(next.status)
		_, _ = io.WriteString(w, next.body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *standIn) requests() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.received...)
}

// proxyKey is the key egress has for the engine.
const proxyKey = "sk-proxy-key"

const answer = `{"model":"llama3","created_at":"2025-06-02T14:07:31.918244Z",` +
	`"message":{"role":"assistant","content":"Seven times six is 42."},` +
	`"done_reason":"stop","done":true,"total_duration":912000000,"prompt_eval_count":26,"eval_count":9}`

// call sends one seat call for an engine on the stand-in through the real
// egress layer: endpoint, allow-list, auth, timeouts, retries.
func call(t *testing.T, srv *standIn, a core.Adapter, req *core.SeatRequest) *core.SeatAnswer {
	t.Helper()
	engine := &core.Engine{
		ID: "local/llama3", Family: "meta", MaxTier: core.TierPlus, Adapter: "ollama", Model: "llama3",
		Endpoint: srv.URL, Carrier: core.CarrierWasm, Plugin: wasmEntry, Timeout: 10 * time.Second,
	}
	// A key is on offer for every engine: an adapter that names auth
	// "none" must make egress send none of it, one that names bearer gets
	// it injected.
	eg, err := egress.New(egress.Config{BaseBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond},
		creds.StaticCredentials{Key: proxyKey}, []*core.Engine{engine})
	require.NoError(t, err)
	t.Cleanup(eg.CloseIdleConnections)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ans, err := eg.Call(ctx, &core.EgressCall{Engine: engine, Adapter: a, Request: req})
	require.NoError(t, err)
	require.NotNil(t, ans)
	return ans
}

func question() *core.SeatRequest {
	zero := 0.0
	return &core.SeatRequest{
		Model: "llama3", System: "Answer in one sentence.",
		Messages:  []core.Message{{Role: core.RoleUser, Content: "What is 6 * 7?"}},
		MaxTokens: 64, Temperature: &zero,
	}
}

// TestEgressOnWasm makes real seat calls through the egress layer with the
// adapter on the WebAssembly carrier, against a stand-in Ollama on
// loopback: the same path a configured engine takes, short of the
// deliberation engine.
func TestEgressOnWasm(t *testing.T) {
	t.Parallel()
	a := loadWasm(t)

	t.Run("answer", func(t *testing.T) {
		t.Parallel()
		srv := newStandIn(t, reply{200, answer})
		ans := call(t, srv, a, question())
		require.Nil(t, ans.Error)
		require.Equal(t, &core.SeatAnswer{Text: "Seven times six is 42.", InputTokens: 26, OutputTokens: 9, Finish: core.FinishStop}, ans)

		got := srv.requests()
		require.Len(t, got, 1)
		r := got[0]
		require.Equal(t, "POST", r.Method)
		require.Equal(t, "/api/chat", r.Path)
		require.Equal(t, "application/json", r.ContentType)
		require.Empty(t, r.Authorization, "auth none: egress injects no credential")
		require.Equal(t, "llama3", r.Body.Model)
		require.NotNil(t, r.Body.Stream)
		require.False(t, *r.Body.Stream, "one answer, not a stream")
		require.Len(t, r.Body.Messages, 2)
		require.Equal(t, "system", r.Body.Messages[0].Role)
		require.Equal(t, "Answer in one sentence.", r.Body.Messages[0].Content)
		require.Equal(t, "user", r.Body.Messages[1].Role)
		require.NotNil(t, r.Body.Options)
		require.Equal(t, 64, r.Body.Options.NumPredict)
		require.NotNil(t, r.Body.Options.Temperature)
		require.Zero(t, *r.Body.Options.Temperature)
	})

	t.Run("busy then answer", func(t *testing.T) {
		t.Parallel()
		busy := reply{503, `{"error":"server busy, please try again.  maximum pending requests exceeded"}`}
		srv := newStandIn(t, busy, busy, reply{200, answer})
		ans := call(t, srv, a, question())
		require.Nil(t, ans.Error, "overloaded is retried")
		require.Equal(t, "Seven times six is 42.", ans.Text)
		require.Len(t, srv.requests(), 3)
	})

	t.Run("model not pulled", func(t *testing.T) {
		t.Parallel()
		srv := newStandIn(t, reply{404, `{"error":"model \"llama3\" not found, try pulling it first"}`})
		ans := call(t, srv, a, question())
		require.Equal(t, &core.ProviderError{Class: core.ErrorBadRequest, Message: `model "llama3" not found, try pulling it first`, Status: 404}, ans.Error)
		require.Len(t, srv.requests(), 1, "bad_request is not retried")
	})
}

// bearer is the adapter for an Ollama behind an authenticating proxy, as
// docs/adapters.md shows it: the same translation, a different scheme.
type bearer struct{ *ollama.Adapter }

func (b bearer) Describe(ctx context.Context) (*core.AdapterInfo, error) {
	info, err := b.Adapter.Describe(ctx)
	if err != nil {
		return nil, err
	}
	info.Auth = core.AuthBearer
	return info, nil
}

// TestBearerBehindProxy checks the documented variant natively: egress
// asks for the engine's key and sends it as a bearer token.
func TestBearerBehindProxy(t *testing.T) {
	t.Parallel()
	srv := newStandIn(t, reply{200, answer})
	ans := call(t, srv, bearer{ollama.New()}, question())
	require.Nil(t, ans.Error)
	got := srv.requests()
	require.Len(t, got, 1)
	require.Equal(t, "Bearer "+proxyKey, got[0].Authorization)
}
