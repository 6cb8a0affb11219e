package mcp

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/conclavehq/conclave/core/carrier"
	"github.com/conclavehq/conclave/core/telemetry"
)

// metrics are the tool server's Prometheus series, all with bounded
// labels. Its HTTP requests are counted in the public listener's series,
// which the REST handler defines (carrier.HTTPMetrics), under the route
// "/mcp" (or its metadata documents' paths), so a dashboard of the
// listener sees /mcp beside /v1; and its refusals before a caller is
// accepted in conclave_auth_failures_total. The tool series count each
// tools/call that runs, by the tool's name in the catalogue ("unknown" for
// any other name) and the code it answered.
type metrics struct {
	http        carrier.HTTPMetrics
	toolCalls   *prometheus.CounterVec   // conclave_mcp_tool_calls_total{tool,code}
	toolLatency *prometheus.HistogramVec // conclave_mcp_tool_call_duration_seconds{tool}
}

// toolBuckets span a tool call's latency, from a listing's milliseconds to
// a deliberation's minutes.
var toolBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// newMetrics registers the tool calls' series with reg; httpm (nil: none)
// counts the HTTP requests.
func newMetrics(reg prometheus.Registerer, httpm carrier.HTTPMetrics) (*metrics, error) {
	if httpm == nil {
		httpm = uncounted{}
	}
	m := &metrics{http: httpm,
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "conclave", Subsystem: "mcp", Name: "tool_calls_total",
			Help: "MCP tool calls run, by tool (\"unknown\" for a name not in the catalogue) and wire code (\"ok\" on success).",
		}, []string{"tool", "code"}),
		toolLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "conclave", Subsystem: "mcp", Name: "tool_call_duration_seconds",
			Help: "MCP tool call latency by tool (\"unknown\" for a name not in the catalogue).", Buckets: toolBuckets,
		}, []string{"tool"}),
	}
	for _, c := range []prometheus.Collector{m.toolCalls, m.toolLatency} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// uncounted counts nothing: a tool server given no HTTP series.
type uncounted struct{}

func (uncounted) Request(context.Context, string, int, string, time.Duration) {}
func (uncounted) AuthFailure(string)                                          {}

// countCall counts a tools/call that ran, with what it answered, and
// observes how long it took.
func (h *Handler) countCall(ctx context.Context, m *message, res *response, elapsed time.Duration) {
	tool := m.tool
	if tool == "" {
		tool = h.tools.label(m)
	}
	h.metrics.toolCalls.WithLabelValues(tool, answerCode(res)).Inc()
	observeLatency(ctx, h.metrics.toolLatency.WithLabelValues(tool), elapsed)
}

// observeLatency observes a tool call's latency, with the trace id of ctx
// as the exemplar when it is traced, as the HTTP series do
// (api.NewHTTPMetrics): from a slow bucket to its trace.
func observeLatency(ctx context.Context, o prometheus.Observer, elapsed time.Duration) {
	if id := telemetry.TraceID(ctx); id != "" {
		if eo, ok := o.(prometheus.ExemplarObserver); ok {
			eo.ObserveWithExemplar(elapsed.Seconds(), prometheus.Labels{"trace_id": id})
			return
		}
	}
	o.Observe(elapsed.Seconds())
}
