package api

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/conclavehq/conclave/core/carrier"
	"github.com/conclavehq/conclave/core/telemetry"
)

// metrics are the HTTP layer's Prometheus series. Labels are bounded: route
// patterns (or "unmatched"), HTTP statuses and wire codes.
type metrics struct {
	requests     *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	authFailures *prometheus.CounterVec
}

// NewHTTPMetrics registers the public listener's HTTP series with reg: the
// REST handler counts into them (Deps.HTTPMetrics), and so does the tool
// server for /mcp.
func NewHTTPMetrics(reg prometheus.Registerer) (carrier.HTTPMetrics, error) { return newMetrics(reg) }

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "conclave", Subsystem: "http", Name: "requests_total",
			Help: "HTTP requests by route pattern, status and wire code (\"ok\" on success).",
		}, []string{"route", "status", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "conclave", Subsystem: "http", Name: "request_duration_seconds",
			Help:    "HTTP request latency by route pattern.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}, []string{"route"}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "conclave", Subsystem: "auth", Name: "failures_total",
			Help: "Requests refused before authorisation, by wire code.",
		}, []string{"code"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.authFailures} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Request counts one request and observes its latency, with its trace id
// as the exemplar when the request was traced: from a slow bucket to its
// trace.
func (m *metrics) Request(ctx context.Context, route string, status int, code string, elapsed time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status), code).Inc()
	o := m.latency.WithLabelValues(route)
	if id := telemetry.TraceID(ctx); id != "" {
		if eo, ok := o.(prometheus.ExemplarObserver); ok {
			eo.ObserveWithExemplar(elapsed.Seconds(), prometheus.Labels{"trace_id": id})
			return
		}
	}
	o.Observe(elapsed.Seconds())
}

// AuthFailure counts a refusal before a caller was accepted.
func (m *metrics) AuthFailure(code string) { m.authFailures.WithLabelValues(code).Inc() }
