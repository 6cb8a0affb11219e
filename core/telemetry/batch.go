package telemetry

import (
	"context"
	"encoding/hex"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// BatchContext puts ctx under the trace of a benchmark batch: its trace id
// is the batch's id (a UUID's 16 bytes, without the dashes) and its parent
// the batch itself, a span id made of the id's last 8 bytes. Every
// question job of the batch — each attempt, on whichever replica — is then
// in that one trace, which an operator finds by the batch id alone. A
// batch id that is not a UUID leaves ctx alone.
func (t Telemetry) BatchContext(ctx context.Context, batchID string) context.Context {
	if !t.On {
		return ctx
	}
	raw, err := hex.DecodeString(strings.ReplaceAll(batchID, "-", ""))
	if err != nil || len(raw) != 16 {
		return ctx
	}
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], raw)
	copy(sid[:], raw[8:])
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, Remote: true})
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

// BatchTraceID is the trace id of a batch's question jobs (BatchContext).
func BatchTraceID(batchID string) string { return strings.ReplaceAll(batchID, "-", "") }
