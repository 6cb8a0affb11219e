package tracing

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// batcher is the span processor Conclave exports with: a span that ends is
// appended to a buffer under a lock, and a goroutine of its own exports
// the buffer every interval. Unlike the SDK's batch processor, ending a
// span wakes no goroutine (a call ends a dozen spans at once), and a span
// the full buffer cannot take is dropped and counted, never waited for.
type batcher struct {
	exp      sdktrace.SpanExporter
	max      int
	interval time.Duration

	mu  sync.Mutex
	buf []sdktrace.ReadOnlySpan

	ended, exported, dropped prometheus.Counter
	stop                     chan struct{}
	done                     chan struct{}
	once                     sync.Once
}

// maxExport is the most spans one export sends.
const maxExport = 512

func newBatcher(exp sdktrace.SpanExporter, max int, interval time.Duration, reg prometheus.Registerer) *batcher {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "conclave", Subsystem: "trace", Name: name, Help: help})
	}
	b := &batcher{exp: exp, max: max, interval: interval, stop: make(chan struct{}), done: make(chan struct{}),
		ended:    counter("spans_ended_total", "Sampled spans that ended."),
		exported: counter("spans_exported_total", "Spans the OTLP collector accepted."),
		dropped:  counter("spans_dropped_total", "Spans dropped: the buffer was full, or their export failed after its retries."),
	}
	if reg != nil {
		reg.MustRegister(b.ended, b.exported, b.dropped)
	}
	go b.loop()
	return b
}

// OnStart does nothing: spans are taken when they end.
func (b *batcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd buffers a sampled span, or drops it when the buffer is full.
func (b *batcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	b.ended.Inc()
	b.mu.Lock()
	full := len(b.buf) >= b.max
	if !full {
		b.buf = append(b.buf, s)
	}
	b.mu.Unlock()
	if full {
		b.dropped.Inc()
	}
}

func (b *batcher) loop() {
	defer close(b.done)
	tick := time.NewTicker(b.interval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			_ = b.flush(context.Background())
		case <-b.stop:
			return
		}
	}
}

// flush exports what is buffered, maxExport spans at a time.
func (b *batcher) flush(ctx context.Context) error {
	b.mu.Lock()
	spans := b.buf
	b.buf = make([]sdktrace.ReadOnlySpan, 0, min(len(spans), b.max))
	b.mu.Unlock()
	var first error
	for len(spans) > 0 {
		n := min(len(spans), maxExport)
		if err := b.exp.ExportSpans(ctx, spans[:n]); err != nil {
			b.dropped.Add(float64(n))
			if first == nil {
				first = err
			}
		} else {
			b.exported.Add(float64(n))
		}
		spans = spans[n:]
	}
	return first
}

// ForceFlush exports what is buffered now.
func (b *batcher) ForceFlush(ctx context.Context) error { return b.flush(ctx) }

// Shutdown stops the loop, exports what is left and shuts the exporter.
func (b *batcher) Shutdown(ctx context.Context) error {
	var err error
	b.once.Do(func() {
		close(b.stop)
		<-b.done
		err = b.flush(ctx)
		if serr := b.exp.Shutdown(ctx); err == nil {
			err = serr
		}
	})
	return err
}
