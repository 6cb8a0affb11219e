package telemetry

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// ProviderCall is the record of one provider call attempt, as a
// deliberation or a benchmark question made it.
type ProviderCall struct {
	// Role is seat-N, hedge, judge, synthesis or classifier.
	Role, Seat string
	Round      int
	// Engine answered (or was asked); Original is the primary it stood in
	// for, on a backup.
	Engine, Original string
	Fallback, Hedged bool
	// Attempt is how it ended: won, cut at quorum, cancelled as a
	// straggler, failed (core.Attempt…); ErrorClass names a failure.
	Attempt, ErrorClass string
	Finish              string
	InputTokens         int
	OutputTokens        int
	CostUSD             float64
	Source              string
	Started, Ended      time.Time
	// Content is the answer's text, put on the span only when content
	// capture is on.
	Content string
}

// RecordCalls adds one CLIENT span per call under ctx's span, timed as
// the call ran: "chat {engine}", with the GenAI attributes (under
// Telemetry.GenAI) and Conclave's (role, seat, round, attempt, cost,
// source). A call that failed has an error status and error.type.
func (t Telemetry) RecordCalls(ctx context.Context, calls []ProviderCall) {
	if !t.On || !Recording(ctx) {
		return
	}
	for _, c := range calls {
		attrs := []attribute.KeyValue{
			Role.String(c.Role), Round.Int(c.Round), Attempt.String(c.Attempt), Source.String(c.Source),
			CostRealUSD.Float64(c.CostUSD), Fallback.Bool(c.Fallback), Hedged.Bool(c.Hedged),
		}
		if c.Seat != "" {
			attrs = append(attrs, Seat.String(c.Seat))
		}
		if t.GenAI {
			requested := c.Engine
			if c.Original != "" {
				requested = c.Original
			}
			attrs = append(attrs, semconv.GenAIOperationNameChat, ProviderName(c.Engine),
				semconv.GenAIRequestModel(requested), semconv.GenAIResponseModel(c.Engine),
				semconv.GenAIUsageInputTokens(c.InputTokens), semconv.GenAIUsageOutputTokens(c.OutputTokens))
			if c.Finish != "" {
				attrs = append(attrs, semconv.GenAIResponseFinishReasons(c.Finish))
			}
			if t.CaptureContent && c.Content != "" {
				attrs = append(attrs, semconv.GenAIOutputMessagesKey.String(OutputMessages(c.Content, c.Finish)))
			}
		}
		_, span := t.tracer().Start(ctx, "chat "+c.Engine, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithTimestamp(c.Started), trace.WithAttributes(attrs...))
		if c.ErrorClass != "" {
			span.SetAttributes(semconv.ErrorTypeKey.String(c.ErrorClass))
			span.SetStatus(codes.Error, c.ErrorClass)
		}
		span.End(trace.WithTimestamp(c.Ended))
	}
}

// ProviderName is gen_ai.provider.name for an engine id ("openai/gpt-4o",
// "sim/atlas"): the conventions' name for the provider its id begins
// with, or that prefix itself.
func ProviderName(engine string) attribute.KeyValue {
	prefix, _, _ := strings.Cut(engine, "/")
	switch prefix {
	case "openai":
		return semconv.GenAIProviderNameOpenAI
	case "anthropic":
		return semconv.GenAIProviderNameAnthropic
	case "google", "gemini":
		return semconv.GenAIProviderNameGCPGemini
	case "bedrock", "aws":
		return semconv.GenAIProviderNameAWSBedrock
	case "mistral":
		return semconv.GenAIProviderNameMistralAI
	}
	return semconv.GenAIProviderNameKey.String(prefix)
}

// message is one entry of gen_ai.input.messages / gen_ai.output.messages.
type message struct {
	Role         string `json:"role"`
	Parts        []part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

type part struct {
	Type    string `json:"type"`
	Content string `json:"content"`
}

// OutputMessages is gen_ai.output.messages for one answer.
func OutputMessages(text, finish string) string {
	b, _ := json.Marshal([]message{{Role: "assistant", Parts: []part{{Type: "text", Content: text}}, FinishReason: finish}})
	return string(b)
}

// InputMessages is gen_ai.input.messages for a caller's messages (role and
// text of each).
func InputMessages(roles, texts []string) string {
	ms := make([]message, len(roles))
	for i := range roles {
		ms[i] = message{Role: roles[i], Parts: []part{{Type: "text", Content: texts[i]}}}
	}
	b, _ := json.Marshal(ms)
	return string(b)
}
