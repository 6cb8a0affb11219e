package tracing

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// failingExporter refuses every export.
type failingExporter struct{ tracetest.InMemoryExporter }

func (*failingExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error {
	return errors.New("collector down")
}

// The batcher buffers what it can hold, drops and counts the rest, exports
// on a flush, and counts what a failed export loses as dropped too.
func TestBatcherDropsWhatItCannotHold(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	b := newBatcher(exp, 2, time.Hour, prometheus.NewRegistry())
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(b))
	tr := tp.Tracer("test")
	for range 3 {
		_, s := tr.Start(context.Background(), "span")
		s.End()
	}
	require.Equal(t, 3.0, testutil.ToFloat64(b.ended))
	require.Equal(t, 1.0, testutil.ToFloat64(b.dropped), "the third did not fit")
	require.Empty(t, exp.GetSpans(), "nothing is exported before the flush")
	require.NoError(t, tp.ForceFlush(context.Background()))
	require.Len(t, exp.GetSpans(), 2)
	require.Equal(t, 2.0, testutil.ToFloat64(b.exported))

	failing := newBatcher(&failingExporter{}, 10, time.Hour, nil)
	tp2 := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(failing))
	_, s := tp2.Tracer("test").Start(context.Background(), "span")
	s.End()
	require.Error(t, tp2.ForceFlush(context.Background()))
	require.Equal(t, 1.0, testutil.ToFloat64(failing.dropped), "a failed export's spans are dropped")
	require.NoError(t, tp.Shutdown(context.Background()))
}
