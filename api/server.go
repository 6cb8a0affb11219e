// Package api serves Conclave's REST API (/v1) over net/http with chi. It is
// REST only: middleware that refuses browsers and hands the bearer key to
// core/access, handlers that decode a request, call a core service
// (core/calls) and render its answer or its *core.Error in the spec's
// envelope, and the operational endpoints (/healthz, /readyz, /metrics).
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
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/calls"
)

// Config configures the REST handler.
type Config struct {
	// MaxBodyBytes caps request bodies; larger ones get 413
	// request_too_large. Defaults to 1 MiB.
	MaxBodyBytes int64
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = 1 << 20
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
	// migrations applied); /readyz answers from it. Required.
	Ready func(ctx context.Context) error
	// Logger defaults to a logger that discards.
	Logger *slog.Logger
	// Registry receives the metrics and is served on /metrics. Defaults to a
	// fresh registry.
	Registry *prometheus.Registry
}

type handler struct {
	cfg     Config
	access  *access.Service
	calls   *calls.Service
	ready   func(ctx context.Context) error
	log     *slog.Logger
	metrics *metrics
	started time.Time
	router  *chi.Mux
}

// New returns the HTTP handler for the whole service.
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
	m, err := newMetrics(d.Registry)
	if err != nil {
		return nil, err
	}
	h := &handler{
		cfg: cfg, access: d.Access, calls: d.Calls, ready: d.Ready,
		log: d.Logger, metrics: m, started: time.Now(),
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
		r.With(h.requireScope(core.ActionModelsRead), h.meter).Get("/models", h.listModels)
		r.With(h.requireScope(core.ActionModelsRead), h.meter).Get("/models/{model}", h.getModel)
		r.With(h.requireScope(core.ActionEstimate)).Post("/estimate", h.estimate)
		r.Mount("/receipts", h.receiptRoutes())
		if h.calls.Deliberates() {
			r.With(h.requireScope(core.ActionChatCreate)).Post("/chat/completions", h.chat)
		}
	})
	return r, nil
}

func (h *handler) notFound(w http.ResponseWriter, r *http.Request) {
	h.refuse(w, r, core.Errorf(core.CodeUnknownURL, "Unknown request URL: %s %s.", r.Method, r.URL.Path))
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
		h.refuse(w, r, core.Errorf(core.CodeMethodNotAllowed, "%s is not allowed on %s.", r.Method, r.URL.Path))
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
