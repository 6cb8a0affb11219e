package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/conclavehq/conclave/adapters/sim"
	"github.com/conclavehq/conclave/api"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/deliberate"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/mcp"
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
	cf := addConfig(fs)
	addr := fs.String("addr", "", "listen on `HOST:PORT` (env CONCLAVE_ADDR); defaults to 127.0.0.1:8080")
	operatorAddr := fs.String("operator-addr", "", "serve /metrics and a detailed /readyz on `HOST:PORT` "+
		`(env CONCLAVE_OPERATOR_ADDR); "off" disables it; defaults to 127.0.0.1:8081`)
	policyDir := fs.String("policy-dir", "", "replace the embedded policies with the .rego files in `DIR`")
	demoFlag := fs.Bool("demo", false, "ensure a demo organisation (ticker DEMO) and a key for it, kept in the data "+
		"directory and printed on every start")
	if err := parse(fs, args); err != nil {
		return err
	}
	stdout, stderr := cio.stdout, cio.stderr
	cfg, err := cf.load()
	if err != nil {
		return err
	}
	if *addr != "" {
		cfg.Server.Addr = *addr
	}
	if *operatorAddr != "" {
		cfg.Server.OperatorAddr = *operatorAddr
	}
	if *policyDir != "" {
		cfg.Policy.Dir = *policyDir
	}
	log := newLogger(cfg.Log, stderr)
	if cfg.Server.MemoryLimitMiB > 0 {
		debug.SetMemoryLimit(int64(cfg.Server.MemoryLimitMiB) << 20)
		log.Info("soft memory limit set", slog.Int("mib", cfg.Server.MemoryLimitMiB))
	}

	catalog, err := cfg.Catalog()
	if err != nil {
		return err
	}
	authz, err := policies.New(ctx, policies.Config{Dir: cfg.Policy.Dir})
	if err != nil {
		return fmt.Errorf("loading policies: %w", err)
	}
	db, err := openDatabase(ctx, cfg, log, true)
	if err != nil {
		return err
	}
	defer db.close()
	stopJobs, err := startJobs(ctx, cfg, db, log)
	if err != nil {
		return err
	}
	defer stopJobs()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	pcfg := providersConfig(cfg, catalog, log, reg)
	if pcfg.BYOK, err = byokResolver(ctx, db.store, log, nil); err != nil {
		return err
	}
	prov, err := providers.Start(ctx, pcfg)
	if err != nil {
		return err
	}
	defer prov.Stop(context.WithoutCancel(ctx))
	engine, err := deliberate.New(deliberate.Config{Catalog: catalog, Caller: prov, Judge: direct.New()})
	if err != nil {
		return err
	}
	acc, svc, err := newCallServices(cfg, catalog, authz, db.store, engine, log)
	if err != nil {
		return err
	}
	if err := svc.Start(ctx); err != nil {
		return err
	}
	defer svc.Stop()
	h, err := api.New(api.Config{MaxBodyBytes: cfg.Server.MaxBodyBytes}, api.Deps{
		Access: acc, Calls: svc, Ready: db.store.Ready, Logger: log, Registry: reg,
	})
	if err != nil {
		return err
	}
	var d *demo
	if *demoFlag {
		if d, err = prepareDemo(ctx, db.store, cfg.DataDir, log); err != nil {
			return err
		}
	}
	// The public listener serves REST at /v1 and the MCP tool server at
	// /mcp; the tool server needs the public URL, which by default is the
	// bound address, so it is mounted once the listener is bound.
	public, err := listen(ctx, cfg, log, cfg.Server.Addr, nil)
	if err != nil {
		return err
	}
	if err := mountPublic(cfg, public, h, mcp.Deps{Access: acc, Calls: svc, Logger: log}); err != nil {
		public.close()
		return err
	}
	operator, operatorBound, err := listenOperator(ctx, cfg, log, reg, db.store.Ready)
	if err != nil {
		public.close()
		return err
	}
	base := "http://" + public.ln.Addr().String()
	simURL := ""
	if prov.Simulator() != nil {
		simURL = prov.Simulator().URL()
	}
	log.Info("serving", slog.String("addr", public.ln.Addr().String()), slog.String("operator_addr", operatorBound),
		slog.Bool("managed_postgres", db.cluster != nil), slog.String("simulated_provider", simURL))
	// One write: a script that waits for "serving on" finds the demo lines
	// with it.
	fmt.Fprint(stdout, banner(base, d))

	public.start()
	operator.start()
	select {
	case err := <-public.served():
		return fmt.Errorf("serving: %w", err)
	case err := <-operator.served():
		return fmt.Errorf("serving the operator listener: %w", err)
	case <-ctx.Done():
	}
	if err := drain(ctx, cfg, log, public, operator, svc); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// mountPublic gives the public listener its handler: the MCP tool server
// on its paths, the REST handler for everything else. The tool server's base URL is server.public_url,
// else http:// and the bound address; its authorization servers are
// auth.authorization_servers, else that base URL.
func mountPublic(cfg *config.Config, public *listener, rest http.Handler, deps mcp.Deps) error {
	base := cfg.Server.PublicURL
	if base == "" {
		base = "http://" + public.ln.Addr().String()
	}
	issuers := cfg.Auth.AuthorizationServers
	if len(issuers) == 0 {
		issuers = []string{strings.TrimRight(base, "/")}
	}
	tools, err := mcp.New(mcp.Config{BaseURL: base, AuthorizationServers: issuers, MaxBodyBytes: cfg.Server.MaxBodyBytes,
		Version: version}, deps)
	if err != nil {
		return err
	}
	public.srv.Handler = tools.Alongside(rest)
	return nil
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
		GoPlugin:  goplugin.Config{CallTimeout: cfg.Plugins.CallTimeout},
		Simulator: sim.Config{Profile: cfg.Simulator.Profile, TimeScale: cfg.Simulator.TimeScale, Seed: cfg.Simulator.Seed},
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
	if c.Format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
