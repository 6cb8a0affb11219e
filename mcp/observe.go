package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/carrier"
	"github.com/conclavehq/conclave/core/telemetry"
)

// The tool server is observed as REST is (the REST handler's observe):
// every HTTP request gets one request id, core.NewID("req"), sent as
// X-Request-Id before anything else; when the request ends, its answer
// goes out, then one info line "request" is logged and the HTTP series are
// counted (metrics.go). The one rule for request ids: a body of one
// message is one request, so the tool call it makes runs under the
// request's id and the X-Request-Id its caller got names the call's
// receipt, as on REST; each tool call of a batch makes its own id, which
// its answer and its receipt carry, and the batch's X-Request-Id names the
// HTTP request alone. Log lines carry ids, the route, the status, the
// code, the methods and the tools — never a key, a header value or a body.

// requestIDHeader carries the request id on every response: REST's header
// (api.RequestIDHeader).
const requestIDHeader = "X-Request-Id"

// exchange is what the tool server learns about one HTTP request as it
// serves it, for the request's log line and metrics. Only the goroutine
// serving the request writes it: the messages of a batch, which run on
// goroutines of their own, never touch it.
type exchange struct {
	id    string
	code  string // the code the answer carried; "" for ok
	orgID string
	keyID string // the API key's id, when one authenticated the request
	// messages is how many elements the body held: 1 for one message, a
	// batch's length, 0 when no body was read.
	messages int
	// methods are the methods of the messages read (a batch's first
	// Config.MaxBatchMessages), as methodName logs them.
	methods []string
	// tools are the tools the tools/calls among them call, as
	// toolSet.label names them.
	tools []string
}

type ctxKey int

const (
	exchangeKey ctxKey = iota
	// soleCallKey holds the request's id when its body is one message:
	// the id that message runs under (messageRequestID).
	soleCallKey
)

func exchangeOf(ctx context.Context) *exchange {
	x, _ := ctx.Value(exchangeKey).(*exchange)
	return x
}

// requestID is the id of the HTTP request ctx belongs to, or "".
func requestID(ctx context.Context) string {
	if x := exchangeOf(ctx); x != nil {
		return x.id
	}
	return ""
}

// observe serves r with serve, giving it its request id, and logs and
// counts it when serve returns.
func (h *Handler) observe(w http.ResponseWriter, r *http.Request, serve http.HandlerFunc) {
	start := time.Now()
	x := &exchange{id: core.NewID("req")}
	w.Header().Set(requestIDHeader, x.id)
	ctx, span := h.tel.StartRequest(r.Context(), r.Method, r.Header, x.id)
	r = r.WithContext(context.WithValue(ctx, exchangeKey, x))
	sw := &carrier.StatusWriter{ResponseWriter: w}
	defer h.record(r, sw, x, start, span)
	serve(sw, r)
}

// record logs the request's line, counts it in the HTTP series and ends
// its span (its messages' spans are its children). The
// answer goes out first, as on REST: a slow log writer never delays it.
func (h *Handler) record(r *http.Request, sw *carrier.StatusWriter, x *exchange, start time.Time, span trace.Span) {
	if sw.Status != 0 {
		sw.Flush()
	}
	status, code := x.outcome(r.Context(), sw.Status)
	route := routeOf(r.URL.Path)
	elapsed := time.Since(start)
	h.metrics.http.Request(r.Context(), route, status, code, elapsed)
	telemetry.EndRequest(span, r.Method, route, status, code, x.orgID, x.keyID)
	h.log.LogAttrs(r.Context(), slog.LevelInfo, "request", x.attrs(r.Method, route, status, code, elapsed)...)
}

// outcome is the status and code the request is logged and counted with,
// given the status written (0 for none): what was answered, or 499
// client_closed_request when nothing was because the caller left.
func (x *exchange) outcome(ctx context.Context, written int) (int, string) {
	status, code := written, x.code
	if status == 0 {
		status = http.StatusOK // what net/http sends for a handler that wrote nothing
		if code == carrier.CodeClientClosed || ctx.Err() != nil {
			status, code = carrier.StatusClientClosed, carrier.CodeClientClosed
		}
	}
	if code == "" {
		code = "ok"
	}
	return status, code
}

// attrs are the request's log line: REST's fields (request_id, method,
// route, status, code, duration, org_id) and key_id; for the tool endpoint,
// batch_size, mcp_methods and tools.
func (x *exchange) attrs(method, route string, status int, code string, elapsed time.Duration) []slog.Attr {
	attrs := []slog.Attr{
		slog.String("request_id", x.id), slog.String("method", method), slog.String("route", route),
		slog.Int("status", status), slog.String("code", code), slog.Duration("duration", elapsed),
	}
	if x.orgID != "" {
		attrs = append(attrs, slog.String("org_id", x.orgID))
	}
	if x.keyID != "" {
		attrs = append(attrs, slog.String("key_id", x.keyID))
	}
	if route != Path {
		return attrs
	}
	attrs = append(attrs, slog.Int("batch_size", x.messages))
	if len(x.methods) > 0 {
		attrs = append(attrs, slog.Any("mcp_methods", x.methods))
	}
	if len(x.tools) > 0 {
		attrs = append(attrs, slog.Any("tools", x.tools))
	}
	return attrs
}

// routeOf is the bounded route label of a path the handler was given: one
// of its own paths, or "unmatched" (as REST labels a path no route serves).
func routeOf(path string) string {
	switch path {
	case Path, MetadataPath, RootMetadataPath:
		return path
	}
	return "unmatched"
}

// noteCaller notes who sent the request: its organisation and its key's
// id (never the key itself). p may be nil.
func noteCaller(ctx context.Context, p *access.Principal) {
	x := exchangeOf(ctx)
	if x == nil || p == nil || p.Org == nil {
		return
	}
	x.orgID = p.Org.ID
	if p.Key != nil {
		x.keyID = p.Key.ID
	}
}

// noteCode notes the code the request's answer carried.
func noteCode(ctx context.Context, code string) {
	if x := exchangeOf(ctx); x != nil && code != "ok" {
		x.code = code
	}
}

// note notes one element of the body that the server reads: its method
// and, for a tools/call, its tool (kept on m, for the call's metrics). m is
// nil for an element that is not a message.
func (h *Handler) note(ctx context.Context, m *message) {
	if m != nil && m.Method != nil && *m.Method == "tools/call" {
		m.tool = h.tools.label(m)
	}
	x := exchangeOf(ctx)
	if x == nil {
		return
	}
	x.messages++
	if m == nil || m.Method == nil {
		return
	}
	x.methods = append(x.methods, methodName(*m.Method))
	if m.tool != "" {
		x.tools = append(x.tools, m.tool)
	}
}

// noteUnread counts an element of a batch past its length limit, which is
// neither run nor logged by method.
func noteUnread(ctx context.Context) {
	if x := exchangeOf(ctx); x != nil {
		x.messages++
	}
}

// maxMethodBytes bounds a method name as logged.
const maxMethodBytes = 64

// methodName is a message's method as logged: as sent when it is at most
// maxMethodBytes of letters, digits and "/_.-" (every MCP method is),
// "unknown" otherwise — a log line never carries a caller's arbitrary
// string.
func methodName(method string) string {
	if method == "" || len(method) > maxMethodBytes {
		return "unknown"
	}
	for _, c := range []byte(method) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '/' || c == '_' || c == '.' || c == '-'
		if !ok {
			return "unknown"
		}
	}
	return method
}

// soleCall marks r as a request whose body is one message, which runs
// under the request's own id (messageRequestID).
func soleCall(r *http.Request) *http.Request {
	id := requestID(r.Context())
	if id == "" {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), soleCallKey, id))
}

// messageRequestID is the request id a message runs under — the id of a
// tool call's receipt, or of the rate a batched protocol message spends:
// its HTTP request's when it is the request's one message (soleCall), a
// new one for each message of a batch.
func messageRequestID(ctx context.Context) string {
	if id, ok := ctx.Value(soleCallKey).(string); ok {
		return id
	}
	return core.NewID("req")
}

// answer writes res as the request's JSON answer with status, noting the
// code it carries.
func answer(w http.ResponseWriter, r *http.Request, status int, res *response) {
	noteCode(r.Context(), answerCode(res))
	writeJSON(w, status, res)
}

// answerCode is the code an answer carries, for the request's log line
// and the metrics: "ok" (nil for a message that needs no answer), the wire
// code of a refusal or of a tool's failure, or for a JSON-RPC error
// without one the name of its code (rpcCodeNames).
func answerCode(res *response) string {
	switch {
	case res == nil:
		return "ok"
	case res.Error != nil:
		return errorCode(res.Error)
	}
	if tr, ok := res.Result.(*toolResult); ok && tr.IsError {
		if tr.code == "" {
			return string(core.CodeInternalError)
		}
		return string(tr.code)
	}
	return "ok"
}

// errorCode is the code of a JSON-RPC error: the wire code its data
// carries, else the name of its JSON-RPC code.
func errorCode(e *rpcError) string {
	switch d := e.Data.(type) {
	case refusalData:
		return d.Code
	case selfAnsweredError:
		return d.Error.Code
	}
	if name, ok := rpcCodeNames[e.Code]; ok {
		return name
	}
	return string(core.CodeInternalError)
}

// rpcCodeNames name the JSON-RPC errors that carry no wire code: REST's
// code for the same fault where REST has one.
var rpcCodeNames = map[int]string{
	codeParseError:     string(core.CodeInvalidJSON),
	codeInvalidRequest: string(core.CodeInvalidRequest),
	codeMethodNotFound: "method_not_found",
	codeInvalidParams:  "invalid_params",
	codeInternalError:  string(core.CodeInternalError),
}

// label is the name a tools/call's tool is counted and logged by: its name
// when the server serves that tool, "unknown" for any other, so that the
// label stays bounded whatever a caller sends.
func (s *toolSet) label(m *message) string {
	var cp struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(m.Params, &cp) == nil {
		if _, ok := s.byName[cp.Name]; ok {
			return cp.Name
		}
	}
	return "unknown"
}
