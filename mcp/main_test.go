package mcp_test

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

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/adapters/sim"
	"github.com/conclavehq/conclave/api"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/bench/execute"
	"github.com/conclavehq/conclave/core/bench/runs"
	"github.com/conclavehq/conclave/core/calls"
	"github.com/conclavehq/conclave/core/deliberate"
	"github.com/conclavehq/conclave/core/genie"
	"github.com/conclavehq/conclave/core/modes"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/jobs"
	"github.com/conclavehq/conclave/internal/logtest"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
	"github.com/conclavehq/conclave/internal/tokens"
	"github.com/conclavehq/conclave/mcp"
	"github.com/conclavehq/conclave/plugins/egress"
	"github.com/conclavehq/conclave/plugins/protocol/direct"
	"github.com/conclavehq/conclave/plugins/providers"
	"github.com/conclavehq/conclave/policies"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// issuer is the authorization server the tests' protected-resource
// document names.
const issuer = "https://auth.conclave.test"

// testBundle is one gateway on loopback, wired as cmd/conclave wires it:
// the REST API and the tool server on the same core services, the real
// engine calling the simulated provider, Postgres; organisations' own
// modes are served beside the configured ones and authored through the
// tool server; benchmark runs are launched into Postgres (with their River
// jobs, which no worker here runs) from the embedded question bank.
type testBundle struct {
	srv     *httptest.Server
	base    string
	pool    *pgxpool.Pool
	store   *pgstore.Store
	catalog *core.Catalog
	calls   *calls.Service
	org     *core.Org
	key     string
	prov    *providers.Providers
	// gone holds the ids of the engines mode authoring reads as
	// unavailable (Available), to make a saved draft fail its release.
	gone *sync.Map
	// access and quotes are the gateway's, for making quotes as ask_genie
	// does (quotes_test.go).
	access *access.Service
	quotes *genie.Quotes
	// reg is the registry the REST handler and the tool server share, as
	// cmd/conclave's do; logs is their JSON log (observe_test.go).
	reg  *prometheus.Registry
	logs *logtest.Buffer

	mu         sync.Mutex
	dispatched []string // methods the tool server dispatched
}

type setupOpts struct {
	timeScale    float64 // the simulator's; defaults to 0.02
	maxBodyBytes int64
	rpm          int
	spy          func(method string) // runs as the dispatch spy records
	progressGap  time.Duration       // the tool server's ProgressInterval
	repeatWait   time.Duration       // the call service's RepeatWait; 0 its default
	noAuthoring  bool                // serve the tools without mode authoring (Deps.Modes nil)
	noRuns       bool                // serve the tools without benchmark runs (Deps.Runs nil)
	testLaunches int                 // the run service's daily test launches; 0 its default
	// judgeConfigured reports whether a judge has an engine (the run
	// service's JudgeConfigured); nil: all do.
	judgeConfigured func(runs.Judge) bool
	answerBytes     int64 // the tool server's MaxBatchAnswerBytes; 0 its default
	// admits, when set, counts the trips to the store's admission (the
	// rate of reads and the admission of calls).
	admits *atomic.Int64
	// launches wraps the run service's launch store (a fault injected);
	// dbURL, when set, is the database to serve (another replica's);
	// historyOff is genie.chat_history off; genieHistory gives ask_genie
	// the chat history and quotes.
	launches     func(runs.LaunchStore) runs.LaunchStore
	dbURL        string
	historyOff   bool
	genieHistory bool
	// quoteLauncher wraps the launcher approve_quote launches with (a
	// fault injected).
	quoteLauncher func(genie.Launcher) genie.Launcher
}

// countedAdmission is the store, counting its admissions.
type countedAdmission struct {
	*pgstore.Store
	n *atomic.Int64
}

func (c countedAdmission) Admit(ctx context.Context, p *core.AdmitParams) (*core.AdmitResult, error) {
	c.n.Add(1)
	return c.Store.Admit(ctx, p)
}

func setup(t testing.TB, opts ...func(*setupOpts)) *testBundle {
	t.Helper()
	o := setupOpts{timeScale: 0.02}
	for _, f := range opts {
		f(&o)
	}
	ctx := context.Background()
	cfg, err := config.Builtin()
	require.NoError(t, err)
	catalog, err := cfg.Catalog()
	require.NoError(t, err)
	var pool *pgxpool.Pool
	if o.dbURL != "" {
		pool, err = pgxpool.New(ctx, o.dbURL)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
	} else {
		pool = pgtest.NewPool(t)
	}
	store := pgstore.New(pool)
	authz, err := policies.New(ctx, policies.Config{})
	require.NoError(t, err)
	validator, err := policies.NewModeValidator(ctx, policies.Config{})
	require.NoError(t, err)
	prov, err := providers.Start(ctx, providers.Config{Catalog: catalog, Simulator: sim.Config{TimeScale: o.timeScale},
		Egress: egress.Config{MaxAttempts: 1}})
	require.NoError(t, err)
	t.Cleanup(func() { prov.Stop(context.Background()) })
	// A fixed shuffle seed and no hedging: the same question deliberates
	// the same way every time, so two carriers' bills can be compared.
	engine, err := deliberate.New(deliberate.Config{Catalog: catalog, Caller: prov, Judge: direct.New(),
		Seed: func() int64 { return 7 }, HedgeAfter: -1})
	require.NoError(t, err)
	var admission core.Admission = store
	if o.admits != nil {
		admission = countedAdmission{Store: store, n: o.admits}
	}
	acc, err := access.New(access.Config{RPM: o.rpm}, store, authz, admission)
	require.NoError(t, err)
	svc, err := calls.New(calls.Config{RepeatWait: o.repeatWait}, calls.Deps{
		Access: acc, Admission: admission, Receipts: store, Outcomes: store,
		Catalog: catalog, Modes: core.NewAuthoredModeSource(catalog, store), Deliberator: engine, TokensOver: tokens.Over,
	})
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctx))
	t.Cleanup(svc.Stop)
	gone := &sync.Map{}
	authoring, err := modes.NewService(modes.Deps{Access: acc, Store: store, Catalog: catalog, Policy: validator,
		Available: func(id string) bool { _, out := gone.Load(id); return !out }})
	require.NoError(t, err)
	if o.noAuthoring {
		authoring = nil
	}
	queue, err := jobs.NewQuestionQueue(pool, 0)
	require.NoError(t, err)
	var launches runs.LaunchStore = pgstore.NewBatches(pool, queue)
	if o.launches != nil {
		launches = o.launches(launches)
	}
	benchRuns, err := runs.NewService(runs.Config{TestLaunchesPerDay: o.testLaunches}, runs.Deps{
		Access: acc, Modes: svc, Store: launches, Bank: execute.Bank{}, Catalog: catalog,
		JudgeConfigured: o.judgeConfigured,
	})
	require.NoError(t, err)
	if o.noRuns {
		benchRuns = nil
	}

	var asker *genie.Asker
	var quotes *genie.Quotes
	if authoring != nil && benchRuns != nil {
		var launcher genie.Launcher = benchRuns
		if o.quoteLauncher != nil {
			launcher = o.quoteLauncher(launcher)
		}
		quotes, err = genie.NewQuotes(genie.QuotesDeps{Runs: launcher, Store: store, HistoryOn: !o.historyOff})
		require.NoError(t, err)
		ad := genie.AskDeps{Modes: svc, Authored: authoring, Runs: benchRuns, Caller: prov, Catalog: catalog,
			Engines: genie.Engines(catalog)}
		if o.genieHistory {
			ad.Quotes, ad.History = quotes, store
		}
		asker, err = genie.NewAsker(ad)
		require.NoError(t, err)
	}

	var proposer *genie.Proposer
	if authoring != nil {
		proposer, err = genie.NewProposer(genie.ProposeDeps{Engines: svc, Validator: authoring, Caller: prov, Catalog: catalog,
			Staff: genie.Engines(catalog), Available: func(id string) bool { _, out := gone.Load(id); return !out }})
		require.NoError(t, err)
	}

	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	tb := &testBundle{srv: srv, base: base, pool: pool, store: store, catalog: catalog, calls: svc, prov: prov, gone: gone,
		access: acc, quotes: quotes, reg: prometheus.NewRegistry(), logs: &logtest.Buffer{}}
	logger := slog.New(slog.NewJSONHandler(tb.logs, nil))
	httpm, err := api.NewHTTPMetrics(tb.reg)
	require.NoError(t, err)
	rest, err := api.New(api.Config{}, api.Deps{Access: acc, Calls: svc, Runs: benchRuns, Ready: store.Ready,
		Registry: tb.reg, HTTPMetrics: httpm, Logger: logger})
	require.NoError(t, err)
	tools, err := mcp.New(mcp.Config{BaseURL: base, AuthorizationServers: []string{issuer}, MaxBodyBytes: o.maxBodyBytes,
		ProgressInterval: o.progressGap, MaxBatchAnswerBytes: o.answerBytes},
		mcp.Deps{Access: acc, Calls: svc, Modes: authoring, Runs: benchRuns, Asker: asker, Quotes: quotes,
			Proposer: proposer, HTTPMetrics: httpm, Registerer: tb.reg, Logger: logger})
	require.NoError(t, err)
	mcp.SetDispatchSpy(tools, func(method string) {
		tb.mu.Lock()
		tb.dispatched = append(tb.dispatched, method)
		tb.mu.Unlock()
		if o.spy != nil {
			o.spy(method)
		}
	})
	srv.Config.Handler = tools.Alongside(rest)
	srv.Start()
	t.Cleanup(srv.Close)

	tb.org, _, err = store.CreateOrg(ctx, &core.CreateOrgParams{Name: "MCP Org"})
	require.NoError(t, err)
	tb.key = tb.newKey(t, tb.org.ID)
	return tb
}

// newKey issues a live key for the organisation orgID.
func (tb *testBundle) newKey(t testing.TB, orgID string) string {
	t.Helper()
	secret, hash := core.NewKeySecret(false)
	_, err := tb.store.CreateKey(context.Background(), &core.CreateKeyParams{OrgID: orgID, Hash: hash, Hint: core.KeyHint(secret)})
	require.NoError(t, err)
	return secret
}

// methods is what the tool server has dispatched so far.
func (tb *testBundle) methods() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return append([]string(nil), tb.dispatched...)
}

// reply is one HTTP answer.
type reply struct {
	status int
	header http.Header
	raw    string
}

// json decodes the body into v.
func (r *reply) json(t testing.TB, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal([]byte(r.raw), v), "body: %s", r.raw)
}

// rpc decodes the body as one JSON-RPC response.
func (r *reply) rpc(t testing.TB) rpcResponse {
	t.Helper()
	var out rpcResponse
	r.json(t, &out)
	require.Equal(t, "2.0", out.JSONRPC, r.raw)
	return out
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// post sends body to path with key as bearer ("" for none) and the headers
// given as name, value pairs.
func (tb *testBundle) post(t testing.TB, path, key, body string, headers ...string) *reply {
	t.Helper()
	return tb.send(t, http.MethodPost, path, key, body, headers...)
}

func (tb *testBundle) send(t testing.TB, method, path, key, body string, headers ...string) *reply {
	t.Helper()
	req, err := http.NewRequest(method, tb.base+path, strings.NewReader(body))
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return &reply{status: res.StatusCode, header: res.Header, raw: string(b)}
}

// callTool sends one tools/call and returns its result.
func (tb *testBundle) callTool(t testing.TB, key, name string, args any) toolResult {
	t.Helper()
	return tb.callToolMeta(t, key, name, args, nil)
}

// callToolMeta sends one tools/call with meta as its _meta (nil for none)
// and returns its result.
func (tb *testBundle) callToolMeta(t testing.TB, key, name string, args any, meta map[string]any) toolResult {
	t.Helper()
	params := map[string]any{"name": name, "arguments": args}
	if meta != nil {
		params["_meta"] = meta
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
	require.NoError(t, err)
	r := tb.post(t, mcp.Path, key, string(body))
	require.Equal(t, http.StatusOK, r.status, r.raw)
	res := r.rpc(t)
	require.Nil(t, res.Error, r.raw)
	var out toolResult
	require.NoError(t, json.Unmarshal(res.Result, &out), r.raw)
	require.Len(t, out.Content, 1, r.raw)
	require.Equal(t, "text", out.Content[0].Type)
	return out
}

type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
	Meta              map[string]any  `json:"_meta"`
}

// text decodes the result's text as JSON into v.
func (r toolResult) text(t testing.TB, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal([]byte(r.Content[0].Text), v), r.Content[0].Text)
}
