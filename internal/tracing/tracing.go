// Package tracing builds Conclave's OpenTelemetry tracing from the
// configuration's tracing section and the standard OTEL_* environment,
// which wins (docs/observability.md): an OTLP/HTTP exporter behind a batch
// processor that never blocks a call, a sampler that a caller's
// traceparent cannot overrule unless tracing.trust_incoming is set, the
// W3C trace-context propagator, counters of the spans exported and
// dropped, and a log handler that adds the trace id to every log line of a
// traced request. Off, it hands out OpenTelemetry's no-op provider.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/conclavehq/conclave/core/telemetry"
	"github.com/conclavehq/conclave/internal/config"
)

// Options are what New builds from.
type Options struct {
	Config     config.Tracing
	Version    string
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	// Getenv reads the environment; os.Getenv when nil.
	Getenv func(string) string
}

// Tracing is a deployment's tracing: the telemetry the core services and
// carriers are given, and what shuts it down.
type Tracing struct {
	// Telemetry is what the services trace with (a no-op tracer when off).
	Telemetry telemetry.Telemetry
	// Endpoint is where spans go; "" when off.
	Endpoint string
	// Sampler names the sampler in force.
	Sampler  string
	provider *sdktrace.TracerProvider
}

// New builds tracing from o. Tracing is on when an OTLP endpoint is set
// (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT or
// tracing.endpoint) and neither OTEL_SDK_DISABLED=true nor
// OTEL_TRACES_EXPORTER=none says otherwise.
func New(ctx context.Context, o Options) (*Tracing, error) {
	env := o.Getenv
	if env == nil {
		env = os.Getenv
	}
	c := o.Config
	t := &Tracing{Telemetry: telemetry.Telemetry{Tracer: noop.NewTracerProvider().Tracer(telemetry.Scope)}}
	endpoint, fromEnv := env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), true
	if endpoint == "" && env("OTEL_EXPORTER_OTLP_ENDPOINT") != "" {
		endpoint = strings.TrimSuffix(env("OTEL_EXPORTER_OTLP_ENDPOINT"), "/") + "/v1/traces"
	}
	if endpoint == "" && c.Endpoint != "" {
		endpoint, fromEnv = strings.TrimSuffix(c.Endpoint, "/")+"/v1/traces", false
	}
	if endpoint == "" || strings.EqualFold(env("OTEL_SDK_DISABLED"), "true") || env("OTEL_TRACES_EXPORTER") == "none" {
		return t, nil
	}
	sampler, name, err := samplerOf(c, env)
	if err != nil {
		return nil, err
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithTimeout(10 * time.Second),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true, InitialInterval: 500 * time.Millisecond,
			MaxInterval: 2 * time.Second, MaxElapsedTime: 10 * time.Second})}
	if !fromEnv {
		opts = append(opts, otlptracehttp.WithEndpointURL(endpoint))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("tracing: the OTLP exporter: %w", err)
	}
	service := c.ServiceName
	if v := env("OTEL_SERVICE_NAME"); v != "" {
		service = v
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithAttributes(
		semconv.ServiceName(service), semconv.ServiceVersion(o.Version)))
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing: the resource: %w", err)
	}
	otel.SetErrorHandler(exportErrors(o.Logger))
	t.provider = NewProvider(exp, sampler, res, o.Registerer)
	t.Endpoint, t.Sampler = endpoint, name
	capture := c.CaptureContent
	if v := env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"); v != "" {
		capture, _ = strconv.ParseBool(v)
	}
	t.Telemetry = telemetry.Telemetry{
		Tracer: t.provider.Tracer(telemetry.Scope, trace.WithInstrumentationVersion(o.Version),
			trace.WithSchemaURL(semconv.SchemaURL)),
		Propagator:     propagation.TraceContext{},
		CaptureContent: capture,
		GenAI:          optedIn(env("OTEL_SEMCONV_STABILITY_OPT_IN"), "gen_ai_latest_experimental"),
		On:             true,
	}
	return t, nil
}

// NewProvider is the tracer provider New builds around an exporter: the
// sampler, and Conclave's batcher, which buffers up to 8,192 spans and
// exports them every second from a goroutine of its own. A dead collector
// costs spans (dropped and counted), never a call's time.
func NewProvider(exp sdktrace.SpanExporter, sampler sdktrace.Sampler, res *resource.Resource, reg prometheus.Registerer) *sdktrace.TracerProvider {
	opts := []sdktrace.TracerProviderOption{sdktrace.WithSampler(sampler),
		sdktrace.WithSpanProcessor(newBatcher(exp, 8192, time.Second, reg))}
	if res != nil {
		opts = append(opts, sdktrace.WithResource(res))
	}
	return sdktrace.NewTracerProvider(opts...)
}

// Shutdown exports what is queued, within ctx.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t.provider == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// exportErrors logs the OpenTelemetry SDK's errors (a failed export,
// mostly) as warnings, at most one a minute: a dead collector is said
// without flooding the log; the dropped spans are counted on /metrics.
func exportErrors(log *slog.Logger) otel.ErrorHandler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var last atomic.Int64
	return otel.ErrorHandlerFunc(func(err error) {
		now := time.Now().UnixNano()
		if prev := last.Load(); now-prev < int64(time.Minute) || !last.CompareAndSwap(prev, now) {
			return
		}
		log.Warn("tracing: the OpenTelemetry exporter failed; its spans are dropped (conclave_trace_spans_dropped_total)",
			slog.String("error", err.Error()))
	})
}

// optedIn is whether the comma-separated list v names want.
func optedIn(v, want string) bool {
	for f := range strings.SplitSeq(v, ",") {
		if strings.TrimSpace(f) == want {
			return true
		}
	}
	return false
}

// samplerOf is the sampler OTEL_TRACES_SAMPLER (or tracing.sampler) names,
// with OTEL_TRACES_SAMPLER_ARG (or tracing.sampler_arg) as
// traceidratio's ratio. Unless trust_incoming is set, a parentbased_
// sampler is its root sampler alone: a caller's trace is continued as the
// parent, but the caller's sampled flag does not decide.
func samplerOf(c config.Tracing, env func(string) string) (sdktrace.Sampler, string, error) {
	name, arg := c.Sampler, c.SamplerArg
	if v := env("OTEL_TRACES_SAMPLER"); v != "" {
		name = v
		if !slices.Contains(config.TracingSamplers, v) {
			return nil, "", fmt.Errorf("tracing: OTEL_TRACES_SAMPLER %q is not one of %s", v, strings.Join(config.TracingSamplers, ", "))
		}
	}
	if v := env("OTEL_TRACES_SAMPLER_ARG"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 1 {
			return nil, "", fmt.Errorf("tracing: OTEL_TRACES_SAMPLER_ARG %q is not a ratio from 0 to 1", v)
		}
		arg = f
	}
	root, parentBased := strings.CutPrefix(name, "parentbased_")
	var s sdktrace.Sampler
	switch root {
	case "always_on":
		s = sdktrace.AlwaysSample()
	case "always_off":
		s = sdktrace.NeverSample()
	default:
		s = sdktrace.TraceIDRatioBased(arg)
	}
	if parentBased && c.TrustIncoming {
		return sdktrace.ParentBased(s), name, nil
	}
	// Within this process a span follows its parent's decision; a remote
	// parent's is not trusted: this server's sampler decides.
	return sdktrace.ParentBased(s, sdktrace.WithRemoteParentSampled(s), sdktrace.WithRemoteParentNotSampled(s)), name, nil
}
