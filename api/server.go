// Package api serves Conclave's REST API (/v1) over net/http with chi: the
// admission middleware (browser origin, bearer key, suspension, policy),
// handlers that translate HTTP into core calls, the one table that turns wire
// codes into HTTP statuses, and the operational endpoints (/healthz, /readyz,
// /metrics).
package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/classify"
)

// Config configures the REST handler.
type Config struct {
	// MaxBodyBytes caps request bodies; larger ones get 413
	// request_too_large. Defaults to 1 MiB.
	MaxBodyBytes int64
	// KeyCacheTTL is how long a successful key lookup is reused; 0 turns
	// caching off. Defaults to 0.
	KeyCacheTTL time.Duration
	// MaxInputTokens is the input limit of a key that sets none. Defaults
	// to 8000.
	MaxInputTokens int
	// CallCeilingFloor is the least a call's bill ceiling can be (the
	// ceiling is the higher of it and the mode's price, unless the key has
	// its own). Defaults to $2.00.
	CallCeilingFloor core.Micros
	// RPM is the requests per minute of a key that sets none. Defaults to
	// 60.
	RPM int
	// Concurrency is the calls in flight of an organisation whose key and
	// organisation set none. Defaults to 5.
	Concurrency int
	// Lease is how long a call's hold, slot and idempotency claim live
	// unless renewed; live calls renew them every third of it. Defaults to
	// 30 s.
	Lease time.Duration
	// ConcurrencyRetryAfter is the Retry-After sent with
	// concurrency_limit_exceeded. Defaults to 5 s.
	ConcurrencyRetryAfter time.Duration
	// ActivationAllowance is what an unverified organisation may spend
	// before verification_required. Defaults to $10.00.
	ActivationAllowance core.Micros
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.MaxInputTokens == 0 {
		c.MaxInputTokens = 8000
	}
	if c.CallCeilingFloor == 0 {
		c.CallCeilingFloor = core.DefaultCeilingFloor
	}
	if c.RPM == 0 {
		c.RPM = 60
	}
	if c.Concurrency == 0 {
		c.Concurrency = 5
	}
	if c.Lease == 0 {
		c.Lease = 30 * time.Second
	}
	if c.ConcurrencyRetryAfter == 0 {
		c.ConcurrencyRetryAfter = 5 * time.Second
	}
	if c.ActivationAllowance == 0 {
		c.ActivationAllowance = 10 * core.MicrosPerUSD
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.MaxBodyBytes < 0:
		return errors.New("api: MaxBodyBytes cannot be negative")
	case c.KeyCacheTTL < 0 || c.KeyCacheTTL > 10*time.Second:
		return errors.New("api: KeyCacheTTL must be between 0 and 10s")
	case c.RPM < 0 || c.Concurrency < 0:
		return errors.New("api: RPM and Concurrency cannot be negative")
	case c.Lease < 300*time.Millisecond:
		return errors.New("api: Lease must be at least 300ms")
	}
	return nil
}

// Deps are the parts the handler serves from.
type Deps struct {
	Store core.Store
	// Rails keeps the rate, concurrency and idempotency counters. Defaults
	// to Store when it implements core.Admission.
	Rails   core.Admission
	Authz   core.Authorizer
	Catalog *core.Catalog
	// Ready reports whether the service can take traffic (database reachable,
	// migrations applied); /readyz answers from it.
	Ready func(ctx context.Context) error
	// Logger defaults to a logger that discards.
	Logger *slog.Logger
	// Registry receives the metrics and is served on /metrics. Defaults to a
	// fresh registry.
	Registry *prometheus.Registry
	// Classifier classifies questions for estimates. Defaults to the
	// deterministic classify.Heuristic.
	Classifier Classifier
	// Deliberator runs chat completions; without one the route is not
	// served. Defaults to none.
	Deliberator Deliberator
	// TokensOver reports whether a request's input tokens exceed a limit,
	// and how many there are when they do (tokens.Over); required with a
	// Deliberator.
	TokensOver func(messages []core.Message, limit int) (n int, over bool)
	// Outcomes records and reads what became of calls without a receipt
	// (GET /v1/receipts answers them with the receipt-unavailable form).
	// Defaults to Store when it implements core.Outcomes.
	Outcomes core.Outcomes
}

// Classifier is what the API needs of a question classifier.
type Classifier interface {
	Classify(ctx context.Context, messages []core.Message) (*classify.Result, error)
}

type handler struct {
	cfg     Config
	store   core.Store
	rails   core.Admission
	leases  *leaseKeeper
	authz   core.Authorizer
	catalog *core.Catalog
	ready   func(ctx context.Context) error
	log     *slog.Logger
	metrics *metrics
	keys    *keyCache
	started time.Time

	classifier  Classifier
	deliberator Deliberator
	tokensOver  func([]core.Message, int) (int, bool)
	outcomes    core.Outcomes // nil: outcomes are neither recorded nor read
	router      *chi.Mux
}

// New returns the HTTP handler for the whole service.
func New(cfg Config, d Deps) (http.Handler, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if d.Store == nil || d.Authz == nil || d.Catalog == nil || d.Ready == nil {
		return nil, errors.New("api: Store, Authz, Catalog and Ready are required")
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Deliberator != nil && d.TokensOver == nil {
		return nil, errors.New("api: TokensOver is required with a Deliberator")
	}
	if d.Rails == nil {
		rails, ok := d.Store.(core.Admission)
		if !ok {
			return nil, errNoRails
		}
		d.Rails = rails
	}
	if d.Outcomes == nil {
		d.Outcomes, _ = d.Store.(core.Outcomes)
	}
	if d.Classifier == nil {
		d.Classifier = classify.Heuristic{}
	}
	if d.Registry == nil {
		d.Registry = prometheus.NewRegistry()
	}
	m, err := newMetrics(d.Registry)
	if err != nil {
		return nil, err
	}
	h := &handler{
		cfg: cfg, store: d.Store, rails: d.Rails, leases: newLeaseKeeper(d.Rails, cfg.Lease, d.Logger), authz: d.Authz, catalog: d.Catalog, ready: d.Ready,
		log: d.Logger, metrics: m, keys: newKeyCache(d.Store, cfg.KeyCacheTTL), started: time.Now(),
		classifier: d.Classifier, deliberator: d.Deliberator, tokensOver: d.TokensOver, outcomes: d.Outcomes,
	}

	r := chi.NewRouter()
	h.router = r
	r.Use(h.observe)
	r.NotFound(h.notFound)
	r.MethodNotAllowed(h.methodNotAllowed(r))

	r.Get("/healthz", h.healthz)
	r.Get("/readyz", h.readyz)
	r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(d.Registry, promhttp.HandlerOpts{}))

	r.Route("/v1", func(r chi.Router) {
		r.Use(h.refuseBrowsers, h.authenticate)
		r.NotFound(h.notFound)
		r.MethodNotAllowed(h.methodNotAllowed(r))
		r.With(h.requireScope(core.ActionModelsRead)).Get("/models", h.listModels)
		r.With(h.requireScope(core.ActionModelsRead)).Get("/models/{model}", h.getModel)
		r.With(h.requireScope(core.ActionEstimate)).Post("/estimate", h.estimate)
		r.Mount("/receipts", h.receiptRoutes())
		if h.deliberator != nil {
			r.With(h.requireScope(core.ActionChatCreate)).Post("/chat/completions", h.chat)
		}
	})
	return r, nil
}

func (h *handler) notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, r, core.Errorf(core.CodeUnknownURL, "Unknown request URL: %s %s.", r.Method, r.URL.Path))
}

var routeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}

// methodNotAllowed answers 405 method_not_allowed with the Allow header
// listing the methods the path does serve.
func (h *handler) methodNotAllowed(routes chi.Routes) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Path
		if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePath != "" {
			path = rc.RoutePath
		}
		var allowed []string
		for _, m := range routeMethods {
			if routes.Match(chi.NewRouteContext(), m, path) {
				allowed = append(allowed, m)
			}
		}
		for _, m := range allowed {
			w.Header().Add("Allow", m)
		}
		writeError(w, r, core.Errorf(core.CodeMethodNotAllowed, "%s is not allowed on %s.", r.Method, r.URL.Path))
	}
}

func (h *handler) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (h *handler) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := h.ready(ctx); err != nil {
		writeError(w, r, core.Errorf(core.CodeServiceUnavailable, "Not ready: %v.", err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
