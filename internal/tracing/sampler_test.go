package tracing

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/conclavehq/conclave/internal/config"
)

// A caller's traceparent is continued either way; whether its sampled
// flag decides is tracing.trust_incoming's: off, this server's sampler
// does. The environment's sampler wins over the file's, and a bad one is
// an error.
func TestSamplerTrustsACallerOnlyWhenTold(t *testing.T) {
	t.Parallel()
	remote := func(sampled bool) context.Context {
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, Remote: true,
			TraceFlags: map[bool]trace.TraceFlags{true: trace.FlagsSampled, false: 0}[sampled]})
		return trace.ContextWithRemoteSpanContext(context.Background(), sc)
	}
	sampled := func(c config.Tracing, env map[string]string, ctx context.Context) bool {
		s, _, err := samplerOf(c, func(k string) string { return env[k] })
		require.NoError(t, err)
		_, span := sdktrace.NewTracerProvider(sdktrace.WithSampler(s)).Tracer("t").Start(ctx, "x")
		require.Equal(t, trace.TraceID{1}, span.SpanContext().TraceID(), "the caller's trace is continued")
		return span.SpanContext().IsSampled()
	}
	on := config.Tracing{Sampler: "parentbased_always_on", SamplerArg: 1}
	off := config.Tracing{Sampler: "parentbased_always_off", SamplerArg: 1}
	require.True(t, sampled(on, nil, remote(false)), "not trusted: a caller's 00 does not stop the trace")
	require.False(t, sampled(off, nil, remote(true)), "not trusted: a caller's 01 does not force one")
	on.TrustIncoming, off.TrustIncoming = true, true
	require.False(t, sampled(on, nil, remote(false)), "trusted: the caller decides")
	require.True(t, sampled(off, nil, remote(true)), "trusted: the caller decides")
	require.False(t, sampled(config.Tracing{Sampler: "always_on"}, map[string]string{"OTEL_TRACES_SAMPLER": "always_off"}, remote(true)),
		"the environment wins")
	_, _, err := samplerOf(on, func(k string) string { return map[string]string{"OTEL_TRACES_SAMPLER": "sometimes"}[k] })
	require.ErrorContains(t, err, "OTEL_TRACES_SAMPLER")
	_, _, err = samplerOf(on, func(k string) string { return map[string]string{"OTEL_TRACES_SAMPLER_ARG": "2"}[k] })
	require.ErrorContains(t, err, "OTEL_TRACES_SAMPLER_ARG")
}
