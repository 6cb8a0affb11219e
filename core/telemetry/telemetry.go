// Package telemetry is how the core services and the carriers trace, on
// OpenTelemetry's API alone (the SDK and the exporter are wired in by
// internal/tracing): the span of a request, of a deliberation
// (invoke_workflow), of its admission and settlement, and one CLIENT span
// per provider call drawn from the record of each call attempt once the
// deliberation has ended, in the GenAI semantic conventions
// (docs/observability.md). With tracing off every function here is a
// no-op that allocates nothing.
package telemetry

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.22.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Scope is the instrumentation scope of Conclave's spans.
const Scope = "github.com/conclavehq/conclave"

// Telemetry is a deployment's tracing as the services see it. The zero
// value traces nothing.
type Telemetry struct {
	// Tracer makes the spans; nil means none.
	Tracer trace.Tracer
	// Propagator reads a caller's traceparent; nil when tracing is off.
	Propagator propagation.TextMapPropagator
	// CaptureContent puts prompts and answers on spans
	// (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT).
	CaptureContent bool
	// GenAI emits the gen_ai.* attributes of the GenAI conventions, which
	// are in development (OTEL_SEMCONV_STABILITY_OPT_IN has
	// gen_ai_latest_experimental).
	GenAI bool
	// On is true when spans are exported.
	On bool
}

var noopTracer = noop.NewTracerProvider().Tracer(Scope)

// tracer is t's tracer, or the no-op one.
func (t Telemetry) tracer() trace.Tracer {
	if t.Tracer == nil {
		return noopTracer
	}
	return t.Tracer
}

// Start starts a span of kind under ctx's span.
func (t Telemetry) Start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !t.On {
		return ctx, trace.SpanFromContext(ctx)
	}
	return t.tracer().Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// Extract continues the trace a caller's traceparent names, when tracing
// is on: the request's span becomes its child.
func (t Telemetry) Extract(ctx context.Context, h http.Header) context.Context {
	if !t.On || t.Propagator == nil {
		return ctx
	}
	return t.Propagator.Extract(ctx, propagation.HeaderCarrier(h))
}

// TraceID is the trace id of ctx's span when this process sampled it, else
// "" (a caller's traceparent alone names no trace of ours).
func TraceID(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.IsSampled() && !sc.IsRemote() {
		return sc.TraceID().String()
	}
	return ""
}

// Recording is whether ctx's span records: attributes are worth computing.
func Recording(ctx context.Context) bool { return trace.SpanFromContext(ctx).IsRecording() }

// Conclave's own attributes: the conventions have none for these.
const (
	RequestID    = attribute.Key("conclave.request_id")
	OrgID        = attribute.Key("conclave.org_id")
	KeyID        = attribute.Key("conclave.key_id")
	Lane         = attribute.Key("conclave.lane")
	Depth        = attribute.Key("conclave.depth")
	Rounds       = attribute.Key("conclave.rounds")
	Converged    = attribute.Key("conclave.converged")
	Capped       = attribute.Key("conclave.capped")
	FinishReason = attribute.Key("conclave.finish_reason")
	CostRealUSD  = attribute.Key("conclave.cost.real_usd")
	CostBilled   = attribute.Key("conclave.cost.billed_usd")
	Source       = attribute.Key("conclave.source")
	Role         = attribute.Key("conclave.role")
	Seat         = attribute.Key("conclave.seat")
	Round        = attribute.Key("conclave.round")
	Attempt      = attribute.Key("conclave.attempt")
	Hedged       = attribute.Key("conclave.hedged")
	Fallback     = attribute.Key("conclave.fallback")
	BatchID      = attribute.Key("conclave.batch_id")
	Question     = attribute.Key("conclave.question")
	Judge        = attribute.Key("conclave.judge")
	Tool         = attribute.Key("conclave.tool")
)

// StartRequest starts the span of a carrier's HTTP request, continuing the
// caller's traceparent in h; EndRequest names and ends it.
func (t Telemetry) StartRequest(ctx context.Context, method string, h http.Header, requestID string) (context.Context, trace.Span) {
	return t.Start(t.Extract(ctx, h), method, trace.SpanKindServer,
		semconv.HTTPRequestMethodKey.String(method), RequestID.String(requestID))
}

// EndRequest names a request's span by its route ("POST
// /v1/chat/completions") and ends it with what was answered: the status,
// the organisation and key (never the key itself) and, on a refusal, its
// code as error.type (an error status on a 5xx).
func EndRequest(span trace.Span, method, route string, status int, code, orgID, keyID string) {
	if !span.IsRecording() {
		span.End()
		return
	}
	span.SetName(method + " " + route)
	span.SetAttributes(semconv.HTTPRoute(route), semconv.HTTPResponseStatusCode(status))
	if orgID != "" {
		span.SetAttributes(OrgID.String(orgID))
	}
	if keyID != "" {
		span.SetAttributes(KeyID.String(keyID))
	}
	if code != "ok" {
		span.SetAttributes(semconv.ErrorTypeKey.String(code))
		if status >= 500 {
			span.SetStatus(codes.Error, code)
		}
	}
	span.End()
}
