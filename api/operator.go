package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// OperatorDeps are the parts the operator handler serves from.
type OperatorDeps struct {
	// Registry is served on /metrics: the registry given to New (and to
	// everything else that records metrics). Required.
	Registry prometheus.Gatherer
	// Ready is the check the public /readyz makes; here a failure names
	// its cause. Required.
	Ready func(ctx context.Context) error
	// Logger receives the errors of gathering metrics. Defaults to a logger
	// that discards.
	Logger *slog.Logger
}

// NewOperator returns the handler of the operator listener: /metrics
// (Prometheus text), /healthz, and a /readyz that says why the service is
// not ready. It asks for no key and the metrics name every engine, so
// serve it where only operators reach it (loopback by default), never on
// the public listener.
func NewOperator(d OperatorDeps) (http.Handler, error) {
	if d.Registry == nil || d.Ready == nil {
		return nil, errors.New("api: Registry and Ready are required")
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	r := chi.NewRouter()
	r.NotFound(notFound)
	r.MethodNotAllowed(methodNotAllowed(r))
	// OpenMetrics when the scraper asks for it: the latency histograms carry
	// trace ids as exemplars.
	r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(d.Registry, promhttp.HandlerOpts{
		EnableOpenMetrics: true,
		ErrorLog:          slog.NewLogLogger(d.Logger.Handler(), slog.LevelError),
	}))
	r.Get("/healthz", healthz)
	r.Get("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := probeReady(r.Context(), d.Ready); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, probeAnswer{Status: "not ready", Error: err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, probeAnswer{Status: "ready"})
	})
	return r, nil
}
