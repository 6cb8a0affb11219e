package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/conclavehq/conclave/internal/logtest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/api"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/bench/runs"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
	"github.com/conclavehq/conclave/policies"
)

func TestMain(m *testing.M) {
	if os.Getenv(simChildEnv) != "" {
		runSimChild() // a child simulator for the CPU benchmarks (simchild_test.go)
	}
	if os.Getenv(loadChildEnv) != "" {
		runLoadChild() // a child load generator for the CPU benchmarks (loadchild_test.go)
	}
	pgtest.Main(m)
}

type testBundle struct {
	srv      *httptest.Server
	operator *httptest.Server // the operator listener (metrics, detailed readiness); set by setup only
	store    *pgstore.Store
	org      *core.Org
	key      string // a live key with every scope
	logs     *logtest.Buffer
}

type setupOpts struct {
	cfg   limits
	ready func(context.Context) error
	// available reports whether an engine can fill a seat now, for mode
	// validation; nil means every engine can.
	available func(engineID string) bool
	// launches stands between the run service and the batch store.
	launches func(runs.LaunchStore) runs.LaunchStore
	// judgeWorking reports whether a judge's engine works now; nil: all do.
	judgeWorking func(runs.Judge) bool
	// judgeConfigured reports whether a judge has an engine; nil: all do.
	judgeConfigured func(runs.Judge) bool
}

// enterpriseMode is a system mode limited to organisations on plan
// "enterprise", added to the built-in catalog for entitlement tests.
const enterpriseMode = "conclave-enterprise"

func setup(t testing.TB, opts ...func(*setupOpts)) *testBundle {
	t.Helper()
	ctx := context.Background()
	o := setupOpts{}
	for _, f := range opts {
		f(&o)
	}
	store := pgstore.New(pgtest.NewPool(t))
	cfg, err := config.Builtin()
	require.NoError(t, err)
	ent := cfg.Modes[0]
	ent.Key, ent.ID, ent.Ticker, ent.Name, ent.Plans = "enterprise", enterpriseMode, "CNCL:ENTR", "Conclave Enterprise", []string{"enterprise"}
	cfg.Modes = append(cfg.Modes, ent)
	catalog, err := cfg.Catalog()
	require.NoError(t, err)
	authz, err := policies.New(ctx, policies.Config{})
	require.NoError(t, err)

	logs := &logtest.Buffer{}
	ready := o.ready
	if ready == nil {
		ready = store.Ready
	}
	pt := &parts{store: store, authz: authz, catalog: catalog, ready: ready, limits: o.cfg, available: o.available, launches: o.launches, judgeWorking: o.judgeWorking, judgeConfigured: o.judgeConfigured,
		logger: slog.New(slog.NewJSONHandler(logs, nil)), registry: prometheus.NewRegistry()}
	h, _ := pt.serve(t)
	srv := newServer(t, h)
	oh, err := api.NewOperator(api.OperatorDeps{Registry: pt.registry, Ready: ready, Logger: pt.logger})
	require.NoError(t, err)
	operator := newServer(t, oh)

	org, _, err := store.CreateOrg(ctx, &core.CreateOrgParams{Name: "Test Org"})
	require.NoError(t, err)
	tb := &testBundle{srv: srv, operator: operator, store: store, org: org, logs: logs}
	tb.key = tb.newKey(t, &core.CreateKeyParams{})
	return tb
}

func setupBench(b *testing.B, cfg limits) *testBundle {
	return setup(b, func(o *setupOpts) { o.cfg = cfg })
}

func newServer(t testing.TB, h http.Handler) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// newKey issues a key for the bundle's organisation (unless p names one).
func (tb *testBundle) newKey(t testing.TB, p *core.CreateKeyParams) string {
	t.Helper()
	secret, hash := core.NewKeySecret(p.Test)
	if p.OrgID == "" {
		p.OrgID = tb.org.ID
	}
	p.Hash, p.Hint = hash, core.KeyHint(secret)
	_, err := tb.store.CreateKey(context.Background(), p)
	require.NoError(t, err)
	return secret
}

type response struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

// do sends one request; key "" sends no Authorization header.
func (tb *testBundle) do(t *testing.T, method, path, key, body string, headers ...string) *response {
	t.Helper()
	return send(t, tb.srv.URL, method, path, key, body, headers...)
}

// send sends one request to the server at base.
func send(t *testing.T, base, method, path, key, body string, headers ...string) *response {
	t.Helper()
	r, err := sendRequest(base, method, path, key, body, headers...)
	require.NoError(t, err)
	return r
}

// sendRequest is send without a test: for requests sent from goroutines
// other than the test's.
func sendRequest(base, method, path, key, body string, headers ...string) (*response, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		return nil, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	out := &response{status: res.StatusCode, header: res.Header, raw: string(b)}
	if len(b) > 0 && strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(b, &out.body); err != nil {
			return nil, fmt.Errorf("body %s: %w", b, err)
		}
	}
	return out, nil
}

// requireError checks status, error.code, error.type, and that the request
// id in the envelope is the one in the X-Request-Id header.
func requireError(t *testing.T, r *response, status int, code core.Code, typ string) {
	t.Helper()
	require.Equal(t, status, r.status, "body: %s", r.raw)
	e, ok := r.body["error"].(map[string]any)
	require.True(t, ok, "no error object in %s", r.raw)
	require.Equal(t, string(code), e["code"], r.raw)
	require.Equal(t, typ, e["type"], r.raw)
	require.NotEmpty(t, e["message"])
	require.Contains(t, e, "param")
	block, ok := r.body["conclave"].(map[string]any)
	require.True(t, ok, "no conclave block in %s", r.raw)
	id, _ := block["request_id"].(string)
	require.True(t, strings.HasPrefix(id, "req_"), "request id %q", id)
	require.Equal(t, r.header.Get(api.RequestIDHeader), id)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
}

func TestBrowserOriginRefusedWhateverTheKey(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, key := range []string{"", "not-a-key", tb.key} {
		r := tb.do(t, "GET", "/v1/models", key, "", "Origin", "https://example.com")
		requireError(t, r, 403, core.CodeBrowserOriginNotAllowed, "permission_error")
	}
	// An empty Origin header is still a browser's Origin header.
	r := tb.do(t, "GET", "/v1/models", tb.key, "", "Origin", "null")
	requireError(t, r, 403, core.CodeBrowserOriginNotAllowed, "permission_error")
}

func TestInvalidAPIKey(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	unknown, _ := core.NewKeySecret(false)
	cases := map[string]string{
		"missing":        "",
		"basic scheme":   "Basic dXNlcjpwYXNz",
		"empty bearer":   "Bearer ",
		"malformed":      "Bearer sk-1234",
		"wrong length":   "Bearer ccl_live_abc",
		"wrong prefix":   "Bearer ccl_prod_" + strings.Repeat("A", 43),
		"unknown":        "Bearer " + unknown,
		"unknown (case)": "bearer " + unknown,
	}
	for name, header := range cases {
		t.Run(name, func(t *testing.T) {
			var r *response
			if header == "" {
				r = tb.do(t, "GET", "/v1/models", "", "")
			} else {
				r = tb.do(t, "GET", "/v1/models", "", "", "Authorization", header)
			}
			requireError(t, r, 401, core.CodeInvalidAPIKey, "authentication_error")
		})
	}
}

func TestRevokedAndExpiredKeys(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ctx := context.Background()

	secret, hash := core.NewKeySecret(false)
	k, err := tb.store.CreateKey(ctx, &core.CreateKeyParams{OrgID: tb.org.ID, Hash: hash, Hint: core.KeyHint(secret)})
	require.NoError(t, err)
	require.Equal(t, 200, tb.do(t, "GET", "/v1/models", secret, "").status)
	_, err = tb.store.RevokeKey(ctx, k.ID)
	require.NoError(t, err)
	requireError(t, tb.do(t, "GET", "/v1/models", secret, ""), 401, core.CodeRevokedAPIKey, "authentication_error")

	past := time.Now().Add(-time.Minute)
	expired := tb.newKey(t, &core.CreateKeyParams{ExpiresAt: &past})
	requireError(t, tb.do(t, "GET", "/v1/models", expired, ""), 401, core.CodeRevokedAPIKey, "authentication_error")
}

func TestRevocationTakesEffectWithinTheCacheWindow(t *testing.T) {
	t.Parallel()
	const ttl = 300 * time.Millisecond
	tb := setup(t, func(o *setupOpts) { o.cfg.KeyCacheTTL = ttl })
	ctx := context.Background()
	secret, hash := core.NewKeySecret(false)
	k, err := tb.store.CreateKey(ctx, &core.CreateKeyParams{OrgID: tb.org.ID, Hash: hash, Hint: core.KeyHint(secret)})
	require.NoError(t, err)
	require.Equal(t, 200, tb.do(t, "GET", "/v1/models", secret, "").status) // now cached
	_, err = tb.store.RevokeKey(ctx, k.ID)
	require.NoError(t, err)
	revokedAt := time.Now()
	require.Eventually(t, func() bool {
		return tb.do(t, "GET", "/v1/models", secret, "").status == 401
	}, 5*time.Second, 50*time.Millisecond)
	// Generous bound for a loaded CI machine; the point is "bounded by the
	// TTL", not a latency figure.
	require.Less(t, time.Since(revokedAt), ttl+3*time.Second)
	requireError(t, tb.do(t, "GET", "/v1/models", secret, ""), 401, core.CodeRevokedAPIKey, "authentication_error")
}

func TestSuspendedOrganisation(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ctx := context.Background()
	_, err := tb.store.SetOrgSuspended(ctx, &core.SetOrgSuspendedParams{OrgID: tb.org.ID, Suspended: true})
	require.NoError(t, err)
	requireError(t, tb.do(t, "GET", "/v1/models", tb.key, ""), 403, core.CodeOrgSuspended, "permission_error")
	requireError(t, tb.do(t, "POST", "/v1/estimate", tb.key, `{"model":"conclave-standard","messages":[{"role":"user","content":"hi"}]}`),
		403, core.CodeOrgSuspended, "permission_error")
	_, err = tb.store.SetOrgSuspended(ctx, &core.SetOrgSuspendedParams{OrgID: tb.org.ID, Suspended: false})
	require.NoError(t, err)
	require.Equal(t, 200, tb.do(t, "GET", "/v1/models", tb.key, "").status)
}

func TestInsufficientScope(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	estimateOnly := tb.newKey(t, &core.CreateKeyParams{Scopes: []string{core.ScopeEstimate}})
	requireError(t, tb.do(t, "GET", "/v1/models", estimateOnly, ""), 403, core.CodeInsufficientScope, "permission_error")
	requireError(t, tb.do(t, "GET", "/v1/models/conclave-standard", estimateOnly, ""), 403, core.CodeInsufficientScope, "permission_error")

	modelsOnly := tb.newKey(t, &core.CreateKeyParams{Scopes: []string{core.ScopeModelsRead}})
	require.Equal(t, 200, tb.do(t, "GET", "/v1/models", modelsOnly, "").status)
	requireError(t, tb.do(t, "POST", "/v1/estimate", modelsOnly, `{"model":"conclave-standard","messages":[{"role":"user","content":"hi"}]}`),
		403, core.CodeInsufficientScope, "permission_error")

	// A key limited to named modes sees and may use only those.
	limited := tb.newKey(t, &core.CreateKeyParams{Modes: []string{"conclave-max"}})
	r := tb.do(t, "GET", "/v1/models", limited, "")
	require.Equal(t, 200, r.status)
	require.Equal(t, []string{"conclave-max"}, modelIDs(r))
	require.Equal(t, 200, tb.do(t, "GET", "/v1/models/CNCL:MAXX", limited, "").status)

	// To read, a mode outside the key's list is a mode that does not exist:
	// the same 404, word for word, as an id no one has. To use it — a call,
	// an estimate, a test run — the key is refused: 403 mode_not_allowed
	// (Authentication 3; the policy's tests cover every action, and the
	// chat tests a call).
	unknown := tb.do(t, "GET", "/v1/models/no-such-mode", limited, "")
	requireError(t, unknown, 404, core.CodeModelNotFound, "invalid_request_error")
	for _, r := range []*response{
		tb.do(t, "GET", "/v1/models/conclave-standard", limited, ""),
		tb.do(t, "GET", "/v1/models/CNCL%3ASTND", limited, ""),
	} {
		requireError(t, r, 404, core.CodeModelNotFound, "invalid_request_error")
		require.Equal(t, unknown.body["error"], r.body["error"])
	}
	chat := `{"model":"CNCL:STND","messages":[{"role":"user","content":"hi"}]}`
	r = tb.do(t, "POST", "/v1/estimate", limited, chat)
	requireError(t, r, 403, core.CodeModeNotAllowed, "permission_error")
	require.Contains(t, r.body["error"].(map[string]any)["message"], "limited to named modes")
}

// A ticker (or slug) a client percent-encoded in the path resolves as
// written plain.
func TestModelByEncodedTicker(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, path := range []string{"/v1/models/CNCL%3ASTND", "/v1/models/CNCL%3aSTND", "/v1/models/conclave%2Dstandard"} {
		r := tb.do(t, "GET", path, tb.key, "")
		require.Equal(t, 200, r.status, path)
		require.Equal(t, "conclave-standard", r.body["id"], path)
	}
	requireError(t, tb.do(t, "GET", "/v1/models/CNCL%3AZZZZ", tb.key, ""), 404, core.CodeModelNotFound, "invalid_request_error")
}

func modelIDs(r *response) []string {
	var ids []string
	for _, m := range r.body["data"].([]any) {
		ids = append(ids, m.(map[string]any)["id"].(string))
	}
	return ids
}

func TestModelNotFound(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, id := range []string{"gpt-4o", "CONCLAVE-STANDARD", "cncl:stnd"} {
		r := tb.do(t, "GET", "/v1/models/"+id, tb.key, "")
		requireError(t, r, 404, core.CodeModelNotFound, "invalid_request_error")
		require.Equal(t, "model", r.body["error"].(map[string]any)["param"])
	}
	r := tb.do(t, "POST", "/v1/estimate", tb.key, `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	requireError(t, r, 404, core.CodeModelNotFound, "invalid_request_error")
}

func TestModeNotPermitted(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ctx := context.Background()
	r := tb.do(t, "GET", "/v1/models", tb.key, "")
	require.Equal(t, []string{"conclave-standard", "conclave-max"}, modelIDs(r), "the plan-limited mode is not listed")

	r = tb.do(t, "GET", "/v1/models/"+enterpriseMode, tb.key, "")
	requireError(t, r, 403, core.CodeModeNotPermitted, "permission_error")
	require.Equal(t, "model", r.body["error"].(map[string]any)["param"])
	r = tb.do(t, "POST", "/v1/estimate", tb.key, `{"model":"CNCL:ENTR","messages":[{"role":"user","content":"hi"}]}`)
	requireError(t, r, 403, core.CodeModeNotPermitted, "permission_error")

	_, err := tb.store.SetOrgPlan(ctx, &core.SetOrgPlanParams{OrgID: tb.org.ID, Plan: "enterprise"})
	require.NoError(t, err)
	require.Equal(t, 200, tb.do(t, "GET", "/v1/models/"+enterpriseMode, tb.key, "").status)
	require.Contains(t, modelIDs(tb.do(t, "GET", "/v1/models", tb.key, "")), enterpriseMode)
}

func TestUnknownRouteAndWrongMethod(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	requireError(t, tb.do(t, "GET", "/v1/nope", tb.key, ""), 404, core.CodeUnknownURL, "invalid_request_error")
	requireError(t, tb.do(t, "GET", "/nope", "", ""), 404, core.CodeUnknownURL, "invalid_request_error")

	r := tb.do(t, "DELETE", "/v1/models", tb.key, "")
	requireError(t, r, 405, core.CodeMethodNotAllowed, "invalid_request_error")
	require.Equal(t, []string{"GET"}, r.header.Values("Allow"))

	r = tb.do(t, "POST", "/v1/models/conclave-standard", tb.key, "{}")
	requireError(t, r, 405, core.CodeMethodNotAllowed, "invalid_request_error")
	require.Equal(t, []string{"GET"}, r.header.Values("Allow"))

	r = tb.do(t, "GET", "/v1/estimate", tb.key, "")
	requireError(t, r, 405, core.CodeMethodNotAllowed, "invalid_request_error")
	require.Equal(t, []string{"POST"}, r.header.Values("Allow"))
}

func TestBodyErrors(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *setupOpts) { o.cfg.MaxBodyBytes = 2048 })
	cases := []struct {
		name, body, contentType string
		status                  int
		code                    core.Code
	}{
		{"not json", "model=conclave-standard", "application/json", 400, core.CodeInvalidJSON},
		{"truncated json", `{"model":"conclave-standard",`, "application/json", 400, core.CodeInvalidJSON},
		{"array", `[{"model":"conclave-standard"}]`, "application/json", 400, core.CodeInvalidJSON},
		{"two objects", `{} {}`, "application/json", 400, core.CodeInvalidJSON},
		{"too large", `{"model":"conclave-standard","messages":[{"role":"user","content":"` + strings.Repeat("a", 4096) + `"}]}`, "application/json", 413, core.CodeRequestTooLarge},
		{"form", `a=b`, "application/x-www-form-urlencoded", 415, core.CodeUnsupportedMediaType},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tb.do(t, "POST", "/v1/estimate", tb.key, tc.body, "Content-Type", tc.contentType)
			requireError(t, r, tc.status, tc.code, "invalid_request_error")
		})
	}
}

func TestEstimateValidation(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	cases := []struct {
		name, body string
		code       core.Code
		param      string
	}{
		{"model missing", `{` + msgs + `}`, core.CodeInvalidModel, "model"},
		{"model null", `{"model":null,` + msgs + `}`, core.CodeInvalidModel, "model"},
		{"model number", `{"model":7,` + msgs + `}`, core.CodeInvalidModel, "model"},
		{"model empty", `{"model":"",` + msgs + `}`, core.CodeInvalidModel, "model"},
		{"messages missing", `{"model":"conclave-standard"}`, core.CodeInvalidMessages, "messages"},
		{"messages empty", `{"model":"conclave-standard","messages":[]}`, core.CodeInvalidMessages, "messages"},
		{"messages object", `{"model":"conclave-standard","messages":{"role":"user"}}`, core.CodeInvalidMessages, "messages"},
		{"bad role", `{"model":"conclave-standard","messages":[{"role":"tool","content":"x"}]}`, core.CodeInvalidMessages, "messages[0].role"},
		{"content not string", `{"model":"conclave-standard","messages":[{"role":"user","content":[{"type":"text"}]}]}`, core.CodeInvalidMessages, "messages[0].content"},
		{"content missing", `{"model":"conclave-standard","messages":[{"role":"user"}]}`, core.CodeInvalidMessages, "messages[0].content"},
		{"no user message", `{"model":"conclave-standard","messages":[{"role":"system","content":"be brief"}]}`, core.CodeInvalidMessages, "messages"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tb.do(t, "POST", "/v1/estimate", tb.key, tc.body)
			requireError(t, r, 400, tc.code, "invalid_request_error")
			require.Equal(t, tc.param, r.body["error"].(map[string]any)["param"])
		})
	}
}

func TestEstimateQuotesTheDepthSurchargeFree(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ctx := context.Background()
	before, err := tb.store.GetBalance(ctx, tb.org.ID)
	require.NoError(t, err)

	hard := `Our twelve-person team runs a monolith on Postgres. Should we split it into microservices this year, given the trade-off between deployment independence and operational overhead? Compare the risks and recommend a strategy.`
	cases := []struct {
		model, question string
		depth           string
		price           float64
		verdict         string
	}{
		{"conclave-standard", "What is 17 * 23?", "light", 0.05, "likely_hurts"},
		{"CNCL:STND", hard, "deep", 0.15, "likely_helps"},
		{"conclave-max", hard, "deep", 0.32, "likely_helps"},
	}
	for _, tc := range cases {
		body, _ := json.Marshal(map[string]any{"model": tc.model, "messages": []map[string]string{{"role": "user", "content": tc.question}}})
		r := tb.do(t, "POST", "/v1/estimate", tb.key, string(body))
		require.Equal(t, 200, r.status, r.raw)
		b := r.body
		require.Equal(t, r.header.Get(api.RequestIDHeader), b["request_id"])
		require.Equal(t, tc.model, b["model"])
		require.Equal(t, tc.depth, b["depth"])
		require.Equal(t, tc.price, b["estimated_price_usd"])
		require.Equal(t, 0.0, b["billed_usd"])
		score := b["difficulty_score"].(float64)
		require.True(t, score >= 0 && score <= 1)
		require.NotEmpty(t, b["task_type"])
		dv := b["deliberation_value"].(map[string]any)
		require.Equal(t, tc.verdict, dv["verdict"])
		for _, f := range []string{"reason", "basis", "evidence"} {
			require.NotEmpty(t, dv[f], f)
		}
		timing := b["timing_ms"].(map[string]any)
		require.Contains(t, timing, "total")
		require.Contains(t, timing, "classify")
		require.NotContains(t, b, "estimated_seconds", "an estimate carries no time estimate")
	}
	mode := tb.do(t, "POST", "/v1/estimate", tb.key, `{"model":"CNCL:STND","messages":[{"role":"user","content":"hi"}]}`).body
	require.Equal(t, "conclave-standard", mode["mode"])
	require.Equal(t, "standard", mode["mode_key"])

	after, err := tb.store.GetBalance(ctx, tb.org.ID)
	require.NoError(t, err)
	require.Equal(t, before.Balance, after.Balance, "estimates are free")
	postings, err := tb.store.ListPostings(ctx, tb.org.ID)
	require.NoError(t, err)
	require.Len(t, postings, 1, "only the trial grant is journaled")
}

func TestMetricsCountRequestsAndAuthFailures(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.do(t, "GET", "/v1/models", tb.key, "")
	tb.do(t, "GET", "/v1/models", "", "")
	tb.do(t, "GET", "/v1/models/nope", tb.key, "")
	tb.scrape(t,
		`conclave_http_requests_total{code="ok",route="/v1/models",status="200"} 1`,
		`conclave_http_requests_total{code="invalid_api_key",route="/v1/models",status="401"} 1`,
		`conclave_http_requests_total{code="model_not_found",route="/v1/models/{model}",status="404"} 1`,
		`conclave_auth_failures_total{code="invalid_api_key"} 1`,
		`conclave_http_request_duration_seconds_bucket{route="/v1/models"`)
}

// scrape reads the operator listener's /metrics until it has every line
// of want: a request's metrics are recorded just after its answer is sent.
func (tb *testBundle) scrape(t *testing.T, want ...string) *response {
	t.Helper()
	var r *response
	require.Eventually(t, func() bool {
		r = send(t, tb.operator.URL, "GET", "/metrics", "", "")
		for _, w := range want {
			if !strings.Contains(r.raw, w) {
				return false
			}
		}
		return true
	}, 5*time.Second, 10*time.Millisecond, "want %q", want)
	return r
}

func TestLogsNeverCarryKeysOrPrompts(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	const prompt = "the secret launch codes are purple-otter-42"
	unknown, _ := core.NewKeySecret(false)
	body, _ := json.Marshal(map[string]any{"model": "conclave-standard", "messages": []map[string]string{{"role": "user", "content": prompt}}})
	ok := tb.do(t, "POST", "/v1/estimate", tb.key, string(body))
	require.Equal(t, 200, ok.status)
	tb.do(t, "POST", "/v1/estimate", unknown, string(body))
	tb.do(t, "GET", "/v1/models", tb.key, "", "Origin", "https://example.com")
	tb.do(t, "POST", "/v1/estimate", tb.key, `{"model":"x","messages":[{"role":"user","content":"`+prompt+`"}]}`)

	logs := tb.logs.String()
	require.Contains(t, logs, ok.header.Get(api.RequestIDHeader), "requests are logged by id")
	require.Contains(t, logs, tb.org.ID)
	for _, secret := range []string{tb.key, unknown, tb.key[len(core.LiveKeyPrefix):], "purple-otter-42"} {
		require.NotContains(t, logs, secret)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, base := range []string{tb.srv.URL, tb.operator.URL} {
		r := send(t, base, "GET", "/healthz", "", "")
		require.Equal(t, 200, r.status)
		require.JSONEq(t, `{"status":"ok"}`, r.raw)
		r = send(t, base, "GET", "/readyz", "", "")
		require.Equal(t, 200, r.status, r.raw)
		require.JSONEq(t, `{"status":"ready"}`, r.raw)
	}

	// A database that is gone makes the service not ready.
	pool := pgtest.NewPool(t)
	gone := pgstore.New(pool)
	down := setup(t, func(o *setupOpts) { o.ready = gone.Ready })
	pool.Close()
	requireError(t, down.do(t, "GET", "/readyz", "", ""), 503, core.CodeServiceUnavailable, "api_error")
	require.Equal(t, 503, send(t, down.operator.URL, "GET", "/readyz", "", "").status)
}

// /metrics names every engine with its calls and latencies, and the spec
// lets model identifiers reach only the paying caller: the public listener
// does not serve it, the operator listener does.
func TestMetricsAreServedOnTheOperatorListenerOnly(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	requireError(t, tb.do(t, "GET", "/metrics", "", ""), 404, core.CodeUnknownURL, "invalid_request_error")
	requireError(t, tb.do(t, "GET", "/metrics", tb.key, ""), 404, core.CodeUnknownURL, "invalid_request_error")

	r := tb.scrape(t, `conclave_http_requests_total{code="unknown_url",route="unmatched",status="404"} 2`,
		"# TYPE conclave_http_request_duration_seconds histogram")
	require.Equal(t, 200, r.status, r.raw)
	require.True(t, strings.HasPrefix(r.header.Get("Content-Type"), "text/plain"), r.header.Get("Content-Type"))
	require.Equal(t, 404, send(t, tb.operator.URL, "GET", "/v1/models", tb.key, "").status,
		"the operator listener serves no API")
}

// The public /readyz answers without a key, so a failure says only that the
// service is not ready: the cause (a socket path, a user, a host) goes to
// the log and to the operator listener.
func TestPublicReadinessNamesNoCause(t *testing.T) {
	t.Parallel()
	cause := errors.New(`failed to connect to user=postgres database=conclave: ` +
		`/var/run/postgresql/.s.PGSQL.5432 (host=db): dial error: connection refused`)
	tb := setup(t, func(o *setupOpts) { o.ready = func(context.Context) error { return cause } })

	r := tb.do(t, "GET", "/readyz", "", "")
	requireError(t, r, 503, core.CodeServiceUnavailable, "api_error")
	require.Equal(t, "Not ready.", r.body["error"].(map[string]any)["message"])
	leaks := []string{"/var/run", ".s.PGSQL", "5432", "postgres", "host=db", "conclave:", "connection refused"}
	for _, leak := range leaks {
		require.NotContains(t, r.raw, leak)
	}
	var logged bool
	for _, line := range strings.Split(tb.logs.String(), "\n") {
		if strings.Contains(line, `"level":"WARN"`) && strings.Contains(line, r.header.Get(api.RequestIDHeader)) &&
			strings.Contains(line, ".s.PGSQL.5432") {
			logged = true
		}
	}
	require.True(t, logged, "the cause is logged at WARN with the request id:\n%s", tb.logs)

	op := send(t, tb.operator.URL, "GET", "/readyz", "", "")
	require.Equal(t, 503, op.status, op.raw)
	require.Equal(t, "not ready", op.body["status"])
	require.Equal(t, cause.Error(), op.body["error"], "the operator listener names the cause")
}

func TestSuccessfulResponsesCarryARequestID(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	seen := map[string]bool{}
	for i := 0; i < 3; i++ {
		r := tb.do(t, "GET", "/v1/models", tb.key, "")
		id := r.header.Get(api.RequestIDHeader)
		require.True(t, strings.HasPrefix(id, "req_"))
		require.False(t, seen[id], "ids are unique")
		seen[id] = true
	}
}

// gateWriter blocks every write until its gate is opened.
type gateWriter struct {
	gate    chan struct{}
	writing chan struct{} // receives once per write that starts
}

func (g *gateWriter) Write(p []byte) (int, error) {
	g.writing <- struct{}{}
	<-g.gate
	return len(p), nil
}

// The answer reaches the client before the request's log line is
// written: a log writer that blocks does not hold the response back.
func TestAnswerIsSentBeforeTheLogLine(t *testing.T) {
	t.Parallel()
	w := &gateWriter{gate: make(chan struct{}), writing: make(chan struct{}, 16)}
	srv := setupWith(t, "Slow log", func(p *parts) { p.logger = slog.New(slog.NewJSONHandler(w, nil)) }).srv
	t.Cleanup(func() { close(w.gate) }) // before the server closes

	client := &http.Client{Timeout: 5 * time.Second}
	res, err := client.Get(srv.URL + "/healthz")
	require.NoError(t, err, "answered while the log line is still being written")
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.JSONEq(t, `{"status":"ok"}`, string(body))
	require.Equal(t, int64(len(body)), res.ContentLength, "the length is sent, so the body is complete when flushed")
	select {
	case <-w.writing:
	case <-time.After(10 * time.Second):
		t.Fatal("the request's log line was never written")
	}
}
