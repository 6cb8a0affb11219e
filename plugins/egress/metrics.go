package egress

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the egress series. Labels are bounded: engine ids come from
// configuration, outcomes are "ok", an error class, "canceled" (the
// caller's context ended) or "error" (no call could be made). A nil
// *metrics records nothing.
type metrics struct {
	calls    *prometheus.CounterVec
	attempts *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// Outcomes that are not error classes.
const (
	outcomeOK       = "ok"
	outcomeCanceled = "canceled"
	outcomeError    = "error"
)

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "conclave", Subsystem: "egress", Name: "calls_total",
			Help: "Provider calls by engine and outcome (\"ok\", an error class, \"canceled\" or \"error\").",
		}, []string{"engine", "outcome"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "conclave", Subsystem: "egress", Name: "attempts_total",
			Help: "Provider call attempts by engine, retries included.",
		}, []string{"engine"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "conclave", Subsystem: "egress", Name: "call_duration_seconds",
			Help:    "Provider call latency by engine, retries and back-off included.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300},
		}, []string{"engine"}),
	}
	var err error
	m.calls, err = register(reg, m.calls)
	if err != nil {
		return nil, err
	}
	m.attempts, err = register(reg, m.attempts)
	if err != nil {
		return nil, err
	}
	m.duration, err = register(reg, m.duration)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or reuses the identical collector another Egress
// on the same registry registered first.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}

func (m *metrics) attempt(engine string) {
	if m != nil {
		m.attempts.WithLabelValues(engine).Inc()
	}
}

func (m *metrics) call(engine, outcome string, d time.Duration) {
	if m != nil {
		m.calls.WithLabelValues(engine, outcome).Inc()
		m.duration.WithLabelValues(engine).Observe(d.Seconds())
	}
}
