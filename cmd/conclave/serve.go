package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/conclavehq/conclave/adapters/sim"
	"github.com/conclavehq/conclave/api"
	apioauth "github.com/conclavehq/conclave/api/oauth"
	"github.com/conclavehq/conclave/api/web"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/alerts"
	"github.com/conclavehq/conclave/core/calls"
	"github.com/conclavehq/conclave/core/carrier"
	"github.com/conclavehq/conclave/core/dashboard"
	"github.com/conclavehq/conclave/core/deliberate"
	"github.com/conclavehq/conclave/core/genie"
	"github.com/conclavehq/conclave/core/modes"
	"github.com/conclavehq/conclave/core/people"
	"github.com/conclavehq/conclave/core/telemetry"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/heapfloor"
	"github.com/conclavehq/conclave/internal/tracing"
	"github.com/conclavehq/conclave/mcp"
	"github.com/conclavehq/conclave/plugins/byok"
	"github.com/conclavehq/conclave/plugins/egress"
	"github.com/conclavehq/conclave/plugins/goplugin"
	"github.com/conclavehq/conclave/plugins/protocol/direct"
	"github.com/conclavehq/conclave/plugins/providers"
	"github.com/conclavehq/conclave/plugins/wasmhost"
	"github.com/conclavehq/conclave/policies"
)

// serve runs the gateway until ctx is cancelled (SIGINT or SIGTERM), then
// drains in-flight requests for up to server.shutdown_timeout.
func serve(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
	// The server's own changes (its jobs) are the system's; each request's
	// are its caller's, set where the request is authenticated.
	ctx = core.WithActor(ctx, core.Actor{Kind: core.ActorSystem})
	cf := addConfig(fs)
	addr := fs.String("addr", "", "listen on `HOST:PORT` (env CONCLAVE_ADDR); defaults to 127.0.0.1:8080")
	operatorAddr := fs.String("operator-addr", "", "serve /metrics and a detailed /readyz on `HOST:PORT` "+
		`(env CONCLAVE_OPERATOR_ADDR); "off" disables it; defaults to 127.0.0.1:8081`)
	operatorPublic := fs.Bool("operator-public", false, "allow --operator-addr off loopback, where others may reach it "+
		"(env CONCLAVE_OPERATOR_PUBLIC); without it such an address is refused")
	policyDir := fs.String("policy-dir", "", "replace the embedded policies with the .rego files in `DIR`")
	demoFlag := fs.Bool("demo", false, "ensure a demo organisation (ticker DEMO) and a key for it, kept in the data "+
		"directory and printed on every start")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, err := cf.load()
	if err != nil {
		return err
	}
	for _, o := range []struct{ flag, setting *string }{
		{addr, &cfg.Server.Addr}, {operatorAddr, &cfg.Server.OperatorAddr}, {policyDir, &cfg.Policy.Dir},
	} {
		if *o.flag != "" {
			*o.setting = *o.flag
		}
	}
	if *operatorPublic {
		cfg.Server.OperatorPublic = true
	}
	// The flags are checked by the rules the file and the environment were.
	if err := cfg.Validate(); err != nil {
		return err
	}
	log := newLogger(cfg.Log, cio.stderr)
	if cfg.Server.MemoryLimitMiB > 0 {
		debug.SetMemoryLimit(int64(cfg.Server.MemoryLimitMiB) << 20)
		log.Info("soft memory limit set", slog.Int("mib", cfg.Server.MemoryLimitMiB))
	}
	defer heapfloor.Set(int64(cfg.Server.HeapFloorMiB) << 20)() // said in the "serving" line
	g := &gateway{cfg: cfg, log: log}
	defer g.close()
	if err := g.build(ctx); err != nil {
		return err
	}
	var d *demo
	if *demoFlag {
		if d, err = prepareDemo(ctx, g.db.store, cfg.DataDir, log); err != nil {
			return err
		}
	}
	return g.run(ctx, cio.stdout, d)
}

// gateway is what serve builds before it listens: the database and its
// jobs, the providers, the call services and the REST handler. close
// stops what was started, in reverse.
// lastUsedFlush is how often the keys' last use is written from memory.
const lastUsedFlush = 10 * time.Second

type gateway struct {
	cfg   *config.Config
	log   *slog.Logger
	db    *database
	prov  *providers.Providers
	reg   *prometheus.Registry
	acc   *access.Service
	svc   *calls.Service
	modes *modes.Service
	bench *benchParts
	asker *genie.Asker
	// quotes makes and approves the assistant's quotes (approve_quote).
	quotes *genie.Quotes
	// proposer designs modes from descriptions (genie_propose_mode).
	proposer *genie.Proposer
	rest     http.Handler
	// tel traces requests, deliberations and runs (docs/observability.md).
	tel telemetry.Telemetry
	// httpm are the public listener's HTTP series, REST's and /mcp's.
	httpm   carrier.HTTPMetrics
	people  *people.Service
	dash    *dashboard.Service
	origin  string // the one origin, once the public listener is bound
	closers []func()
	// tokens verifies connected apps' access tokens: the embedded
	// authorization server's, or auth.authorization_servers[0]'s. Set by
	// mountPublic.
	tokens access.TokenVerifier
	// cimd is how the authorization server fetches client metadata
	// documents: the zero value in production; tests point its resolver
	// and dialer at their own servers.
	cimd apioauth.FetcherConfig
}

func (g *gateway) close() {
	for i := len(g.closers) - 1; i >= 0; i-- {
		g.closers[i]()
	}
}

// build opens the database and starts everything the listeners serve.
func (g *gateway) build(ctx context.Context) error {
	cfg, log := g.cfg, g.log
	catalog, err := cfg.Catalog()
	if err != nil {
		return err
	}
	authz, err := policies.New(ctx, policies.Config{Dir: cfg.Policy.Dir})
	if err != nil {
		return fmt.Errorf("loading policies: %w", err)
	}
	if g.db, err = openDatabase(ctx, cfg, log, true); err != nil {
		return err
	}
	g.closers = append(g.closers, g.db.close)

	g.reg = prometheus.NewRegistry()
	g.reg.MustRegister(collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(memoryMetrics)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := g.startTracing(ctx); err != nil {
		return err
	}
	pcfg := providersConfig(cfg, catalog, log, g.reg)
	if pcfg.BYOK, err = byokResolver(ctx, g.db.store, log, nil); err != nil {
		return err
	}
	if g.prov, err = providers.Start(ctx, pcfg); err != nil {
		return err
	}
	tester := &byok.Tester{Catalog: catalog, Caller: g.prov}
	if pcfg.BYOK != nil {
		tester.Forget = pcfg.BYOK.Forget
	}
	g.closers = append(g.closers, func() { g.prov.Stop(context.WithoutCancel(ctx)) })
	engine, err := deliberate.New(deliberate.Config{Catalog: catalog, Caller: g.prov, Judge: direct.New()})
	if err != nil {
		return err
	}
	if g.acc, g.svc, err = newCallServices(cfg, catalog, authz, g.db.store, engine, log, g.tel); err != nil {
		return err
	}
	if err := g.svc.Start(ctx); err != nil {
		return err
	}
	g.closers = append(g.closers, g.svc.Stop)
	// Read when scraped: nothing on the call's path.
	svc := g.svc
	if err := g.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "conclave_calls_in_flight",
		Help: "Billed calls (REST and MCP) running on this replica: admitted, not yet settled or released.",
	}, func() float64 { return float64(svc.Running()) })); err != nil {
		return err
	}
	if g.dash, err = newDashboard(cfg, g.db.store, g.acc, g.svc, tester, pcfg.BYOK != nil); err != nil {
		return err
	}
	g.keepLastUsed(ctx)
	if err := g.buildAuthoring(ctx, catalog, engine); err != nil {
		return err
	}
	// Every replica works benchmark questions: River discards a job whose
	// kind its replica does not know, so the executor is registered here
	// before the jobs start.
	stopJobs, err := startJobs(ctx, cfg, g.db, g.bench.executor, log)
	if err != nil {
		return err
	}
	g.closers = append(g.closers, stopJobs)
	// REST and the tool server count their requests in one set of series.
	if g.httpm, err = api.NewHTTPMetrics(g.reg); err != nil {
		return err
	}
	g.rest, err = api.New(api.Config{MaxBodyBytes: cfg.Server.MaxBodyBytes, TrustedProxies: cfg.Server.Proxies()}, api.Deps{
		Access: g.acc, Calls: g.svc, Modes: g.modes, Runs: g.bench.launch, Ready: g.db.store.Ready, Logger: log, Registry: g.reg,
		Telemetry: g.tel, HTTPMetrics: g.httpm,
	})
	return err
}

// startTracing builds tracing from the configuration and the OTEL_*
// environment; off, g.tel traces nothing. Spans still queued are exported
// when the gateway closes.
func (g *gateway) startTracing(ctx context.Context) error {
	tr, err := tracing.New(ctx, tracing.Options{Config: g.cfg.Tracing, Version: version, Registerer: g.reg, Logger: g.log})
	if err != nil {
		return err
	}
	g.tel = tr.Telemetry
	if tr.Endpoint != "" {
		g.log.Info("tracing on", slog.String("endpoint", tr.Endpoint), slog.String("sampler", tr.Sampler),
			slog.Bool("trust_incoming", g.cfg.Tracing.TrustIncoming), slog.Bool("capture_content", tr.Telemetry.CaptureContent))
	}
	g.closers = append(g.closers, func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := tr.Shutdown(sctx); err != nil {
			g.log.Warn("tracing: spans not exported at shutdown", slog.String("error", err.Error()))
		}
	})
	return nil
}

// keepLastUsed keeps when each key was last used in memory, flushed every
// few seconds, and once more on the way out (before the database closes).
func (g *gateway) keepLastUsed(ctx context.Context) {
	usedCtx, stopUsed := context.WithCancel(context.WithoutCancel(ctx))
	usedDone := make(chan struct{})
	go func() {
		defer close(usedDone)
		g.acc.KeepLastUsed(usedCtx, g.db.store, lastUsedFlush, g.log)
	}()
	g.closers = append(g.closers, func() { stopUsed(); <-usedDone })
}

// buildAuthoring starts mode authoring, the benchmark runs and the mode
// assistant (its quotes, answers and proposals).
func (g *gateway) buildAuthoring(ctx context.Context, catalog *core.Catalog, engine *deliberate.Engine) error {
	cfg, log := g.cfg, g.log
	specs, err := policies.NewModeValidator(ctx, policies.Config{Dir: cfg.Policy.Dir})
	if err != nil {
		return fmt.Errorf("loading the mode validation policy: %w", err)
	}
	if g.modes, err = modes.NewService(modes.Deps{Access: g.acc, Store: g.db.store, Catalog: catalog, Policy: specs,
		MaxModes: cfg.Limits.ModesPerOrg, Judging: benchJudging(cfg, catalog), Logger: log}); err != nil {
		return err
	}
	if g.bench, err = newBench(cfg, catalog, g.db, g, engine, log); err != nil {
		return err
	}
	if g.quotes, err = newQuotes(cfg, g, log); err != nil {
		return err
	}
	if g.asker, err = newAsker(cfg, catalog, g, log); err != nil {
		return err
	}
	g.proposer, err = genie.NewProposer(genie.ProposeDeps{Engines: g.svc, Validator: g.modes, Caller: g.prov, Catalog: catalog,
		Staff: genie.Engines(catalog), Logger: log.With(slog.String("component", "genie"))})
	return err
}

// run binds the listeners, prints the banner, serves until ctx ends or a
// listener fails, then drains.
func (g *gateway) run(ctx context.Context, stdout io.Writer, d *demo) error {
	cfg, log := g.cfg, g.log
	// The public listener serves REST at /v1 and the MCP tool server at
	// /mcp; the tool server needs the public URL, which by default is the
	// bound address, so it is mounted once the listener is bound.
	public, err := listen(ctx, cfg, log, cfg.Server.Addr, nil)
	if err != nil {
		return err
	}
	if cfg.Server.H2C {
		// server.h2c: HTTP/2 with prior knowledge beside HTTP/1.1, for a
		// proxy in front that multiplexes its calls.
		var protocols http.Protocols
		protocols.SetHTTP1(true)
		protocols.SetUnencryptedHTTP2(true)
		public.srv.Protocols = &protocols
	}
	if err := g.mountPublic(ctx, public); err != nil {
		public.close()
		return err
	}
	if d != nil {
		d.linkTTL = g.people.Config().LinkTTL
		if d.ownerLink, err = demoOwnerLink(ctx, g.people, g.db.store, d.org); err != nil {
			public.close()
			return err
		}
	}
	operator, operatorBound, err := listenOperator(ctx, cfg, log, g.reg, g.db.store.Ready)
	if err != nil {
		public.close()
		return err
	}
	// The one origin is where to open Conclave; behind a proxy (a
	// configured public URL) the banner names the bound address first,
	// which scripts on this host reach.
	base := g.origin
	if cfg.Server.PublicURL != "" {
		base = "http://" + public.ln.Addr().String() + " (public URL " + g.origin + ")"
	}
	simURL := ""
	if g.prov.Simulator() != nil {
		simURL = g.prov.Simulator().URL()
	}
	log.Info("serving", slog.String("addr", public.ln.Addr().String()), slog.String("operator_addr", operatorBound),
		slog.Bool("managed_postgres", g.db.cluster != nil), slog.String("simulated_provider", simURL),
		slog.Int("heap_floor_mib", cfg.Server.HeapFloorMiB))
	// One write: a script that waits for "serving on" finds the demo lines
	// with it.
	fmt.Fprint(stdout, banner(base, g.origin, d))

	public.start()
	operator.start()
	select {
	case err := <-public.served():
		return fmt.Errorf("serving: %w", err)
	case err := <-operator.served():
		return fmt.Errorf("serving the operator listener: %w", err)
	case <-ctx.Done():
	}
	if err := drain(ctx, cfg, log, public, operator, g.svc); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// mountPublic builds what needs the service's one origin — by default
// http://localhost and the bound port — and serves it on the public
// listener: the MCP tool server at /mcp (and its discovery documents), REST
// at /v1 with the probes, the OAuth authorization server at its paths
// (unless auth.authorization_servers names another), and the pages for
// people at every other path.
func (g *gateway) mountPublic(ctx context.Context, public *listener) error {
	cfg := g.cfg
	origin := cfg.Server.Origin(public.ln.Addr().String())
	issuers := cfg.Auth.AuthorizationServers
	var (
		authServer *apioauth.Server
		consent    web.Consent
	)
	if len(issuers) == 0 {
		issuers = []string{origin}
		var err error
		if authServer, err = g.authorizationServer(ctx, origin); err != nil {
			return err
		}
		g.tokens, consent = authServer.Verifier(), authServer
	} else {
		var err error
		if g.tokens, err = apioauth.NewExternalVerifiers(issuers, apioauth.ExternalConfig{Audience: origin + mcp.Path}); err != nil {
			return err
		}
	}
	// /mcp takes the tokens beside API keys; /v1 stays keys only.
	if err := g.acc.UseTokens(g.tokens, g.db.store, cfg.Auth.GrantCacheTTL); err != nil {
		return err
	}
	tools, err := mcp.New(mcp.Config{BaseURL: origin, AuthorizationServers: issuers, MaxBodyBytes: cfg.Server.MaxBodyBytes,
		TrustedProxies: cfg.Server.Proxies(), Version: version}, mcp.Deps{Access: g.acc, Calls: g.svc, Modes: g.modes, Runs: g.bench.launch, Asker: g.asker, Telemetry: g.tel,
		Proposer: g.proposer, Quotes: g.quotes,
		Logger: g.log, HTTPMetrics: g.httpm, Registerer: g.reg})
	if err != nil {
		return err
	}
	if g.people, err = newPeople(cfg, g.db.store, g.acc, origin, nil); err != nil {
		return err
	}
	spendAlerts, err := alerts.New(alerts.Deps{Access: g.acc, Store: g.db.store, AllowLoopback: cfg.Alerts.AllowLoopbackWebhooks})
	if err != nil {
		return err
	}
	pages, err := web.New(web.Config{PublicURL: origin, TrustedProxies: cfg.Server.Proxies()},
		web.Deps{People: g.people, Dashboard: g.dash, Health: g.db.store, Consent: consent, Logger: g.log,
			Modes: g.modes, Runs: g.bench.launch, Calls: g.svc, Alerts: spendAlerts})
	if err != nil {
		return err
	}
	var as http.Handler
	if authServer != nil {
		as = authServer
	}
	public.srv.Handler = routePublic(tools.Alongside(g.rest), as, pages)
	g.origin = origin
	return nil
}

// routePublic sends the authorization server's paths (apioauth.Paths:
// /authorize, /token, /register, /revoke, /jwks and its two discovery
// documents) to oauth when it is on (non-nil), the API's paths — /v1,
// /mcp, the other discovery documents under /.well-known and the probes —
// to api, and every other path to the pages.
func routePublic(api, oauth, pages http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		switch {
		case oauth != nil && slices.Contains(apioauth.Paths, p):
			oauth.ServeHTTP(w, r)
		case p == "/v1", strings.HasPrefix(p, "/v1/"), p == mcp.Path, strings.HasPrefix(p, mcp.Path+"/"),
			strings.HasPrefix(p, "/.well-known/"), p == "/healthz", p == "/readyz":
			api.ServeHTTP(w, r)
		default:
			pages.ServeHTTP(w, r)
		}
	})
}

// listenOperator binds the operator listener (server.operator_addr): the
// metrics name every engine, and its /readyz names the cause, so it is not
// the public one. It returns nil and config.OperatorOff when it is off, and
// the bound address otherwise.
func listenOperator(ctx context.Context, cfg *config.Config, log *slog.Logger, reg *prometheus.Registry,
	ready func(context.Context) error) (*listener, string, error) {
	if cfg.Server.OperatorAddr == config.OperatorOff {
		return nil, config.OperatorOff, nil
	}
	oh, err := api.NewOperator(api.OperatorDeps{Registry: reg, Ready: ready, Logger: log})
	if err != nil {
		return nil, "", err
	}
	operator, err := listen(ctx, cfg, log, cfg.Server.OperatorAddr, oh)
	if err != nil {
		return nil, "", fmt.Errorf("server.operator_addr: %w", err)
	}
	// Validate refused this address unless server.operator_public allowed
	// it; say so once, where an operator reads.
	if a, ok := operator.ln.Addr().(*net.TCPAddr); ok && !a.IP.IsLoopback() {
		log.Warn("the operator listener is not on loopback (server.operator_public): "+
			"keep its address where only operators reach it", slog.String("operator_addr", a.String()))
	}
	return operator, operator.ln.Addr().String(), nil
}

// listener is an HTTP server on its bound listener, and once started the
// result of its Serve.
type listener struct {
	srv  *http.Server
	ln   net.Listener
	errc chan error
}

// listen binds addr for h with the server's timeouts. Requests run on a
// context that outlives ctx: a stopping server drains them.
func listen(ctx context.Context, cfg *config.Config, log *slog.Logger, addr string, h http.Handler) (*listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: cfg.Server.ReadHeaderTimeout,
		ReadTimeout:       cfg.Server.ReadTimeout,
		WriteTimeout:      cfg.Server.WriteTimeout,
		IdleTimeout:       cfg.Server.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	return &listener{srv: srv, ln: ln, errc: make(chan error, 1)}, nil
}

// start serves in the background; nil (a listener turned off) does nothing.
func (l *listener) start() {
	if l != nil {
		go func() { l.errc <- l.srv.Serve(l.ln) }()
	}
}

// served delivers Serve's result; nil (never ready) for a listener turned off.
func (l *listener) served() <-chan error {
	if l == nil {
		return nil
	}
	return l.errc
}

// close closes a listener that never started.
func (l *listener) close() {
	if l != nil {
		_ = l.ln.Close()
	}
}

// providersConfig maps the deployment configuration onto the providers'
// wiring: carriers, simulator and egress.
func providersConfig(cfg *config.Config, catalog *core.Catalog, log *slog.Logger, reg prometheus.Registerer) providers.Config {
	return providers.Config{
		Catalog:      catalog,
		ManifestPath: cfg.Plugins.Manifest,
		Wasm: wasmhost.Config{
			CacheDir: cfg.WasmCache(), PoolSize: cfg.Plugins.WasmPoolSize,
			MemoryLimitPages: uint32(cfg.Plugins.WasmMemoryLimitMiB) * 16, CallTimeout: cfg.Plugins.CallTimeout,
		},
		GoPlugin: goplugin.Config{CallTimeout: cfg.Plugins.CallTimeout},
		Simulator: sim.Config{Profile: cfg.Simulator.Profile, TimeScale: cfg.Simulator.TimeScale, Seed: cfg.Simulator.Seed,
			Quality: sim.QualityConfig{AnswerNoise: cfg.Simulator.Quality.AnswerNoise,
				SynthesisLift: cfg.Simulator.Quality.SynthesisLift, SynthesisBest: cfg.Simulator.Quality.SynthesisBest,
				Difficulty: simDifficulty(cfg.Simulator.Quality.Difficulty)}},
		Egress: egress.Config{
			AllowHosts: cfg.Egress.AllowHosts, DefaultTimeout: cfg.Egress.DefaultTimeout,
			MaxResponseBytes: cfg.Egress.MaxResponseBytes, MaxAttempts: cfg.Egress.MaxAttempts, BaseBackoff: cfg.Egress.BaseBackoff,
			H2C: cfg.Egress.H2C,
		},
		Logger:     log,
		Registerer: reg,
	}
}

func newLogger(c config.Log, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level)) // validated by config
	opts := &slog.HandlerOptions{Level: level}
	// A line logged in a traced request carries its trace_id.
	if c.Format == "text" {
		return slog.New(tracing.LogHandler(slog.NewTextHandler(w, opts)))
	}
	return slog.New(tracing.LogHandler(slog.NewJSONHandler(w, opts)))
}

// simDifficulty is the configured difficulty of the question bank's
// verifiable items for the simulator; nil, its default, when none is.
func simDifficulty(d *config.SimDifficulty) *sim.Difficulty {
	if d == nil {
		return nil
	}
	return &sim.Difficulty{Light: d.Light, Medium: d.Medium, Hard: d.Hard}
}

// memoryMetrics adds to the Go collector's defaults the runtime's figures
// that say where a replica's memory goes when it holds many calls open:
// the live heap (go_gc_heap_live_bytes), the goroutine stacks and globals
// in use, as opposed to allocated (go_gc_scan_stack_bytes,
// go_gc_scan_globals_bytes), and the stack a new goroutine starts with
// (go_gc_stack_starting_size_bytes).
var memoryMetrics = collectors.GoRuntimeMetricsRule{
	Matcher: regexp.MustCompile(`^/gc/(heap/live|scan/stack|scan/globals|stack/starting-size):bytes$`),
}
