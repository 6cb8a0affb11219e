package mcp

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/telemetry"
)

// messageSpan starts the span of one JSON-RPC message, "tools/call
// deliberate" or its method, as the MCP conventions name it, with the
// organisation and the key (never the key itself) that sent it. A
// deliberation's invoke_workflow span is its child.
func (h *Handler) messageSpan(ctx context.Context, p *access.Principal, m *message) (context.Context, trace.Span) {
	if !h.tel.On || m.Method == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	name := *m.Method
	attrs := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(semconv.McpMethodNameKey.String(name))}
	if name == "tools/call" {
		var cp struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(m.Params, &cp) == nil && cp.Name != "" {
			name += " " + cp.Name
			attrs = append(attrs, trace.WithAttributes(telemetry.Tool.String(cp.Name), semconv.GenAIToolName(cp.Name)))
		}
	}
	if p != nil && p.Org != nil {
		attrs = append(attrs, trace.WithAttributes(telemetry.OrgID.String(p.Org.ID)))
		if p.Key != nil {
			attrs = append(attrs, trace.WithAttributes(telemetry.KeyID.String(p.Key.ID)))
		}
	}
	return h.tel.Tracer.Start(ctx, name, attrs...)
}

// endMessageSpan ends a message's span with its error's code, if any.
func endMessageSpan(span trace.Span, res *response) {
	if span.IsRecording() && res != nil && res.Error != nil {
		span.SetStatus(codes.Error, res.Error.Message)
	}
	span.End()
}
