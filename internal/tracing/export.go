package tracing

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// countingExporter counts the spans that ended, were exported and were
// dropped because their export failed (the collector down or refusing).
// Spans the batch processor's full queue drops are ended − exported −
// dropped once the queue is empty.
type countingExporter struct {
	sdktrace.SpanExporter
	ended, exported, failed prometheus.Counter
}

func newCountingExporter(e sdktrace.SpanExporter, reg prometheus.Registerer) *countingExporter {
	c := &countingExporter{
		SpanExporter: e,
		ended: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "conclave", Subsystem: "trace", Name: "spans_ended_total",
			Help: "Sampled spans that ended, queued for export."}),
		exported: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "conclave", Subsystem: "trace", Name: "spans_exported_total",
			Help: "Spans the OTLP collector accepted."}),
		failed: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "conclave", Subsystem: "trace", Name: "spans_dropped_total",
			Help: "Spans dropped because their export failed after its retries (a full queue's drops are ended - exported - dropped)."}),
	}
	if reg != nil {
		reg.MustRegister(c.ended, c.exported, c.failed)
	}
	return c
}

// ExportSpans exports spans and counts how that went.
func (c *countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := c.SpanExporter.ExportSpans(ctx, spans)
	if err != nil {
		c.failed.Add(float64(len(spans)))
		return err
	}
	c.exported.Add(float64(len(spans)))
	return nil
}

// ending is a span processor counting every sampled span that ends.
func (c *countingExporter) ending() sdktrace.SpanProcessor { return endCounter{c.ended} }

type endCounter struct{ n prometheus.Counter }

func (endCounter) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (e endCounter) OnEnd(s sdktrace.ReadOnlySpan) {
	if s.SpanContext().IsSampled() {
		e.n.Inc()
	}
}
func (endCounter) Shutdown(context.Context) error   { return nil }
func (endCounter) ForceFlush(context.Context) error { return nil }
