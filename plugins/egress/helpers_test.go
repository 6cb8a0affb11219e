package egress_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conclavehq/conclave/internal/logtest"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/egress"
)

// secret is the API key the tests inject; it must never reach an adapter,
// a log line, an error or a metric.
const secret = "sk-live-test-3b9f0c1d2e4a5b6c7d8e"

// seen is a request as a provider stand-in received it.
type seen struct {
	Method, Path, Query, Host string
	Header                    http.Header
	Body                      []byte
}

// provider is an httptest stand-in for a model provider. handle gets the
// request's body and its 1-based number.
type provider struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seen
}

func newProvider(t testing.TB, handle func(w http.ResponseWriter, r *http.Request, body []byte, n int)) *provider {
	t.Helper()
	p := &provider{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.reqs = append(p.reqs, seen{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Host: r.Host, Header: r.Header.Clone(), Body: body})
		n := len(p.reqs)
		p.mu.Unlock()
		handle(w, r, body, n)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *provider) requests() []seen {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]seen(nil), p.reqs...)
}

// engine is an engine served by p, under a base path.
func (p *provider) engine(id string) *core.Engine {
	return &core.Engine{ID: id, Endpoint: p.URL + "/api/", Model: "test-model"}
}

// reply answers with a status and body.
func reply(status int, body string) func(http.ResponseWriter, *http.Request, []byte, int) {
	return func(w http.ResponseWriter, _ *http.Request, _ []byte, _ int) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// forgedHeaders are what a careless or hostile adapter might set; the auth
// and transport ones must never reach the provider.
var forgedHeaders = map[string]string{
	"Content-Type":         "application/json",
	"X-Custom":             "kept",
	"Authorization":        "Bearer forged-by-adapter",
	"Proxy-Authorization":  "Basic Zm9yZ2Vk",
	"x-api-key":            "forged-by-adapter",
	"API-KEY":              "forged-by-adapter",
	"x-goog-api-key":       "forged-by-adapter",
	"Cookie":               "session=forged",
	"X-Amz-Date":           "20000101T000000Z",
	"x-amz-security-token": "forged-token",
	"X-AMZ-Content-Sha256": "forged",
	"Host":                 "evil.example",
	"Content-Length":       "1",
}

// testAdapter stands in for a real adapter and records every input it is
// given. By default it POSTs the seat request as JSON to /v1/chat with the
// forged headers, and parses by status: 200 is an answer whose text is the
// body, other statuses are classified the way real adapters do.
type testAdapter struct {
	auth        core.AuthScheme
	build       func(*core.SeatRequest) (*core.HTTPRequest, error)
	parse       func(*core.HTTPResponse) (*core.SeatAnswer, error)
	describeErr error

	mu        sync.Mutex
	describes int
	builds    []*core.SeatRequest
	parses    []*core.HTTPResponse
}

func (a *testAdapter) Describe(context.Context) (*core.AdapterInfo, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.describes++
	if a.describeErr != nil {
		return nil, a.describeErr
	}
	return &core.AdapterInfo{Name: "test", Version: "1", Auth: a.auth}, nil
}

func (a *testAdapter) BuildRequest(_ context.Context, req *core.SeatRequest) (*core.HTTPRequest, error) {
	a.mu.Lock()
	a.builds = append(a.builds, req)
	a.mu.Unlock()
	if a.build != nil {
		return a.build(req)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	h := make(map[string]string, len(forgedHeaders))
	for k, v := range forgedHeaders {
		h[k] = v
	}
	return &core.HTTPRequest{Method: http.MethodPost, Path: "/v1/chat?x=1", Header: h, Body: body}, nil
}

func (a *testAdapter) ParseResponse(_ context.Context, res *core.HTTPResponse) (*core.SeatAnswer, error) {
	a.mu.Lock()
	a.parses = append(a.parses, res)
	a.mu.Unlock()
	if a.parse != nil {
		return a.parse(res)
	}
	return classify(res), nil
}

func classify(res *core.HTTPResponse) *core.SeatAnswer {
	if res.Status == http.StatusOK {
		return &core.SeatAnswer{Text: string(res.Body), InputTokens: 3, OutputTokens: 5, Finish: core.FinishStop}
	}
	class := core.ErrorMalformed
	switch {
	case res.Status == http.StatusTooManyRequests:
		class = core.ErrorRateLimited
	case res.Status >= 500:
		class = core.ErrorOverloaded
	case res.Status == http.StatusUnauthorized || res.Status == http.StatusForbidden:
		class = core.ErrorAuthRefused
	case res.Status == http.StatusBadRequest:
		class = core.ErrorBadRequest
	}
	return &core.SeatAnswer{Error: &core.ProviderError{Class: class, Message: "provider said no"}}
}

func (a *testAdapter) counts() (describes, builds, parses int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.describes, len(a.builds), len(a.parses)
}

// inputs is everything the adapter was given, as text, for leak checks.
func (a *testAdapter) inputs(t testing.TB) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	b, err := json.Marshal(struct {
		Builds []*core.SeatRequest
		Parses []*core.HTTPResponse
	}{a.builds, a.parses})
	require.NoError(t, err)
	// Bodies are []byte, which JSON writes as base64: add them as text.
	var sb strings.Builder
	sb.Write(b)
	for _, p := range a.parses {
		sb.Write(p.Body)
		for k, v := range p.Header {
			sb.WriteString(k + ": " + v + "\n")
		}
	}
	return sb.String()
}

func (a *testAdapter) lastResponse() *core.HTTPResponse {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.parses) == 0 {
		return nil
	}
	return a.parses[len(a.parses)-1]
}

// credFunc adapts a function to core.Credentials.
type credFunc func(ctx context.Context, req *core.CredentialRequest) (*core.Credential, error)

func (f credFunc) Credential(ctx context.Context, req *core.CredentialRequest) (*core.Credential, error) {
	return f(ctx, req)
}

// countingCreds counts the credentials asked of it.
type countingCreds struct {
	core.Credentials
	n atomic.Int64
}

func (c *countingCreds) Credential(ctx context.Context, req *core.CredentialRequest) (*core.Credential, error) {
	c.n.Add(1)
	return c.Credentials.Credential(ctx, req)
}

type testBundle struct {
	eg   *egress.Egress
	logs *logtest.Buffer
	reg  *prometheus.Registry
}

// setup builds an Egress that logs at debug level into a buffer and
// registers metrics in a fresh registry. Back-off defaults to milliseconds.
func setup(t testing.TB, cfg egress.Config, credentials core.Credentials, engines ...*core.Engine) *testBundle {
	t.Helper()
	logs := &logtest.Buffer{}
	cfg.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	if cfg.BaseBackoff == 0 && cfg.MaxBackoff == 0 {
		cfg.BaseBackoff, cfg.MaxBackoff = time.Millisecond, 5*time.Millisecond
	}
	eg, err := egress.New(cfg, credentials, engines)
	require.NoError(t, err)
	t.Cleanup(eg.CloseIdleConnections)
	return &testBundle{eg: eg, logs: logs, reg: reg}
}

func seatRequest() *core.SeatRequest {
	return &core.SeatRequest{Model: "test-model", System: "be brief", Messages: []core.Message{{Role: core.RoleUser, Content: "hello"}}, MaxTokens: 64}
}

func (b *testBundle) call(ctx context.Context, eng *core.Engine, a core.Adapter) (*core.SeatAnswer, error) {
	return b.eg.Call(ctx, &core.EgressCall{Engine: eng, Adapter: a, Request: seatRequest(), OrgID: "org_1"})
}

// mustAnswer makes a call that must produce an answer (no Go error).
func (b *testBundle) mustAnswer(t testing.TB, eng *core.Engine, a core.Adapter) *core.SeatAnswer {
	t.Helper()
	ans, err := b.call(context.Background(), eng, a)
	require.NoError(t, err)
	require.NotNil(t, ans)
	return ans
}

func requireClass(t testing.TB, ans *core.SeatAnswer, class core.ErrorClass) {
	t.Helper()
	require.NotNil(t, ans.Error, "want class %s, got an answer", class)
	require.Equal(t, class, ans.Error.Class, ans.Error.Message)
}

// metric finds the value of one series: a counter's value or a histogram's
// sample count. It returns 0 for a series that does not exist.
func (b *testBundle) metric(t testing.TB, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := b.reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if matches(m, labels) {
				if h := m.GetHistogram(); h != nil {
					return float64(h.GetSampleCount())
				}
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func matches(m *dto.Metric, labels map[string]string) bool {
	if len(m.GetLabel()) != len(labels) {
		return false
	}
	for _, l := range m.GetLabel() {
		if labels[l.GetName()] != l.GetValue() {
			return false
		}
	}
	return true
}
