package mcp

import (
	"context"

	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/telemetry"
)

// messageSpan starts the span of one JSON-RPC message, "tools/call
// deliberate" (the tool as h.note labelled it: a served tool, or
// "unknown") or its method, as the MCP conventions name it, with the
// organisation and the key (never the key itself) that sent it. A
// deliberation's invoke_workflow span is its child.
func (h *Handler) messageSpan(ctx context.Context, p *access.Principal, m *message) (context.Context, trace.Span) {
	if !h.tel.On || m.Method == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	name := methodName(*m.Method) // a caller's odd method is "unknown": span names stay bounded
	attrs := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(semconv.McpMethodNameKey.String(name))}
	if m.tool != "" { // noted before dispatch: a served tool's name, or "unknown"
		name += " " + m.tool
		attrs = append(attrs, trace.WithAttributes(telemetry.Tool.String(m.tool), semconv.GenAIToolName(m.tool)))
	}
	if p != nil && p.Org != nil {
		attrs = append(attrs, trace.WithAttributes(telemetry.OrgID.String(p.Org.ID)))
		if p.Key != nil {
			attrs = append(attrs, trace.WithAttributes(telemetry.KeyID.String(p.Key.ID)))
		}
	}
	return h.tel.Tracer.Start(ctx, name, attrs...)
}

// endMessageSpan ends a message's span with the code its answer carried
// (answerCode: a JSON-RPC error's, or a tool's failure) as error.type and
// an error status, as REST's request span has a refusal's.
func endMessageSpan(span trace.Span, res *response) {
	if span.IsRecording() {
		if code := answerCode(res); code != "ok" {
			span.SetAttributes(semconv.ErrorTypeKey.String(code))
			span.SetStatus(codes.Error, code)
		}
	}
	span.End()
}
