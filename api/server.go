// Package api serves Conclave's REST API (/v1) over net/http with chi. It is
// REST only: middleware that refuses browsers and hands the bearer key to
// core/access, handlers that decode a request, call a core service
// (core/calls; core/modes for mode authoring under /v1/modes) and render its
// answer or its *core.Error in the spec's envelope, and the probes /healthz
// and /readyz. NewOperator serves what only
// operators may read — /metrics and the cause of a failed /readyz — for a
// listener of its own.
package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/bench/runs"
	"github.com/conclavehq/conclave/core/calls"
	"github.com/conclavehq/conclave/core/carrier"
	"github.com/conclavehq/conclave/core/modes"
	"github.com/conclavehq/conclave/core/telemetry"
)

// Config configures the REST handler.
type Config struct {
	// MaxBodyBytes caps request bodies; larger ones get 413
	// request_too_large. Defaults to 1 MiB.
	MaxBodyBytes int64
	// TrustedProxies are the proxies whose X-Forwarded-For names the
	// client address the audit trail records. Defaults to none.
	TrustedProxies []netip.Prefix
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = carrier.DefaultMaxBodyBytes
	}
	return c
}

func (c Config) validate() error {
	if c.MaxBodyBytes < 0 {
		return errors.New("api: MaxBodyBytes cannot be negative")
	}
	return nil
}

// Deps are the parts the handler serves from.
type Deps struct {
	// Access authenticates, authorizes and meters callers. Required.
	Access *access.Service
	// Calls runs billed calls, estimates and receipt reads. Required.
	Calls *calls.Service
	// Ready reports whether the service can take traffic (database reachable,
	// migrations applied); /readyz answers from it, naming no cause. Required.
	Ready func(ctx context.Context) error
	// Modes authors organisations' own modes at /v1/modes. Optional: when
	// nil those routes are not served (an unknown URL).
	Modes *modes.Service
	// Runs launches and polls benchmark runs at /v1/tests and
	// /v1/certify. Optional: when nil those routes are not served.
	Runs *runs.Service
	// Logger defaults to a logger that discards.
	Logger *slog.Logger
	// Registry receives the HTTP metrics; the handler does not serve them
	// (NewOperator does). Defaults to a fresh registry.
	Registry *prometheus.Registry
	// HTTPMetrics are the series the handler counts its requests in,
	// shared with the tool server (NewHTTPMetrics). Defaults to new ones
	// registered in Registry.
	HTTPMetrics carrier.HTTPMetrics
	// Telemetry traces each request (its span continues a caller's
	// traceparent). Defaults to none.
	Telemetry telemetry.Telemetry
}

type handler struct {
	cfg     Config
	access  *access.Service
	calls   *calls.Service
	modes   *modes.Service // nil: /v1/modes is not served
	runs    *runs.Service  // nil: /v1/tests and /v1/certify are not served
	ready   func(ctx context.Context) error
	log     *slog.Logger
	tel     telemetry.Telemetry
	metrics carrier.HTTPMetrics
	started time.Time
	router  *chi.Mux
}

// New returns the public HTTP handler: the API under /v1 and the probes
// /healthz and /readyz. It serves no metrics: /metrics is an unknown URL.
func New(cfg Config, d Deps) (http.Handler, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if d.Access == nil || d.Calls == nil || d.Ready == nil {
		return nil, errors.New("api: Access, Calls and Ready are required")
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Registry == nil {
		d.Registry = prometheus.NewRegistry()
	}
	m := d.HTTPMetrics
	if m == nil {
		var err error
		if m, err = newMetrics(d.Registry); err != nil {
			return nil, err
		}
	}
	h := &handler{
		cfg: cfg, access: d.Access, calls: d.Calls, modes: d.Modes, runs: d.Runs, ready: d.Ready,
		log: d.Logger, tel: d.Telemetry, metrics: m, started: time.Now(),
	}

	r := chi.NewRouter()
	h.router = r
	r.Use(h.observe)
	r.NotFound(notFound)
	r.MethodNotAllowed(methodNotAllowed(r))

	r.Get("/healthz", healthz)
	r.Get("/readyz", h.readyz)

	r.Route("/v1", func(r chi.Router) {
		r.Use(h.refuseBrowsers)
		// Any other path or method under /v1 is refused like a request
		// to the API: the key first, then its rate, then 404 or 405.
		r.NotFound(h.keyed(notFound))
		r.MethodNotAllowed(h.keyed(methodNotAllowed(r)))
		// The API's description is public: no key (openapi.go).
		r.Get("/openapi.json", openAPI)
		r.Group(func(r chi.Router) {
			r.Use(h.authenticate)
			r.With(h.requireScope(core.ActionModelsRead), h.meter).Get("/models", h.listModels)
			r.With(h.requireScope(core.ActionModelsRead), h.meter).Get("/models/{model}", h.getModel)
			r.With(h.requireScope(core.ActionEstimate)).Post("/estimate", h.estimate)
			r.Mount("/receipts", h.receiptRoutes())
			if h.modes != nil {
				r.Mount("/modes", h.modeRoutes())
			}
			if h.runs != nil {
				h.runRoutes(r)
			}
			if h.calls.Deliberates() {
				r.With(h.requireScope(core.ActionChatCreate)).Post("/chat/completions", h.chat)
			}
		})
	})
	return r, nil
}

// keyed authenticates the request, then spends its rate (metered) before
// next refuses it.
func (h *handler) keyed(next http.HandlerFunc) http.HandlerFunc {
	return h.authenticate(h.metered(next)).ServeHTTP
}

// metered spends the key's rate before an authenticated request is
// refused by next (an unknown URL or method): 429 instead once it is spent.
func (h *handler) metered(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if p := principalOf(r.Context()); p != nil {
			if err := h.access.Refused(r.Context(), p, RequestID(r.Context()), nil); err != nil {
				writeError(w, r, err)
				return
			}
		}
		next(w, r)
	}
}

func notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, r, core.Errorf(core.CodeUnknownURL, "Unknown request URL: %s %s.", r.Method, r.URL.Path))
}

var routeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}

// methodNotAllowed answers 405 method_not_allowed with the Allow header
// listing the methods the path does serve.
func methodNotAllowed(routes chi.Routes) http.HandlerFunc {
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

// probeAnswer is the body of /healthz and /readyz. Only the operator
// listener's /readyz fills Error.
type probeAnswer struct {
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

func healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, probeAnswer{Status: "ok"})
}

// readyz answers whether the service can take traffic. Anyone may ask, so
// a failure names no cause — a database error carries its host, user and
// socket path —; the cause is logged, and the operator listener's /readyz
// answers it.
func (h *handler) readyz(w http.ResponseWriter, r *http.Request) {
	if err := probeReady(r.Context(), h.ready); err != nil {
		h.log.WarnContext(r.Context(), "not ready",
			slog.String("request_id", RequestID(r.Context())), slog.String("error", err.Error()))
		writeError(w, r, core.Errorf(core.CodeServiceUnavailable, "Not ready."))
		return
	}
	writeJSON(w, http.StatusOK, probeAnswer{Status: "ready"})
}

// probeReady runs ready with the probes' time limit.
func probeReady(ctx context.Context, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return ready(ctx)
}
