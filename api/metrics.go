package api

import "github.com/prometheus/client_golang/prometheus"

// metrics are the HTTP layer's Prometheus series. Labels are bounded: route
// patterns (or "unmatched"), HTTP statuses and wire codes.
type metrics struct {
	requests     *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	authFailures *prometheus.CounterVec
}

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
