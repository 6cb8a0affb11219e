package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/conclavehq/conclave/internal/logtest"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

// otlpReceiver is an OTLP/HTTP trace receiver on loopback: it decodes what
// the gateway's exporter sends, as a collector does.
type otlpReceiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	rc := &otlpReceiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req coltrace.ExportTraceServiceRequest
		if err != nil || r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				rc.spans = append(rc.spans, ss.Spans...)
			}
		}
		rc.mu.Unlock()
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// trace waits until the trace id has a span named want, and returns the
// trace's spans.
func (rc *otlpReceiver) trace(t *testing.T, traceID, want string) []*tracepb.Span {
	t.Helper()
	of := func() (out []*tracepb.Span, found bool) {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		for _, s := range rc.spans {
			if hex.EncodeToString(s.TraceId) == traceID {
				out = append(out, s)
				found = found || s.Name == want
			}
		}
		return out, found
	}
	require.Eventually(t, func() bool { _, found := of(); return found }, 20*time.Second, 50*time.Millisecond,
		"no span %q in trace %s", want, traceID)
	out, _ := of()
	return out
}

// attrs are a span's attributes as strings.
func attrs(s *tracepb.Span) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_BoolValue:
			m[kv.Key] = strconv.FormatBool(v.BoolValue)
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = strconv.FormatInt(v.IntValue, 10)
		case *commonpb.AnyValue_DoubleValue:
			m[kv.Key] = strconv.FormatFloat(v.DoubleValue, 'f', -1, 64)
		case *commonpb.AnyValue_ArrayValue:
			var parts []string
			for _, e := range v.ArrayValue.Values {
				parts = append(parts, e.GetStringValue())
			}
			m[kv.Key] = strings.Join(parts, ",")
		}
	}
	return m
}

// tracedGateway is `conclave serve` on a database of its own, with an
// organisation's key and a client: what each tracing test starts from.
type tracedGateway struct {
	p    *process
	pool *pgxpool.Pool
	key  string
	c    *cluster
}

// startTraced starts a gateway with env (the OTEL_* variables; the
// database's URL is added) and the configuration extra appends to
// infoConfig's.
func startTraced(t *testing.T, extra string, env ...string) *tracedGateway {
	t.Helper()
	dbURL := pgtest.NewDatabase(t)
	cfg := infoConfig(t, dbURL)
	if extra != "" {
		f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(extra)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	g := &tracedGateway{p: startServe(t, t.TempDir(), append(env, "DATABASE_URL="+dbURL), "--config", cfg),
		c: &cluster{client: &http.Client{Timeout: time.Minute}}}
	var err error
	g.pool, err = pgxpool.New(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(g.pool.Close)
	_, g.key = newOrgKey(t, pgstore.New(g.pool), t.Name(), 0, 10_000, 0)
	return g
}

// A traced gateway (the standard OTEL_* environment pointing at a loopback
// OTLP receiver): a panel call whose first seat fails over to its backup,
// sent with a caller's traceparent whose sampled flag is off, is traced
// anyway (this server's sampler decides) as a child of the caller's span:
// the request span, invoke_workflow with its money, admission and
// settlement, one CLIENT chat span per provider call with the GenAI
// attributes, the failed one in error. The receipt and the request's log
// line carry the trace id; a refused call has a request span with its code
// and no deliberation; content is on the spans only when opted in.
func TestTracesAPanelCall(t *testing.T) {
	t.Parallel()
	rc := newOTLPReceiver(t)
	g := startTraced(t, "", "OTEL_EXPORTER_OTLP_ENDPOINT="+rc.srv.URL, "OTEL_TRACES_SAMPLER=parentbased_always_on",
		"OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental", "OTEL_SERVICE_NAME=conclave-test")
	ctx, p, pool, key, c := context.Background(), g.p, g.pool, g.key, g.c

	const callerTrace, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	r := c.post(p.base, "/v1/chat/completions", key,
		chatJSON("Should we split the monolith into microservices this year? Compare the risks. [[sim@atlas: error=overloaded]]"),
		"traceparent", "00-"+callerTrace+"-"+callerSpan+"-00")
	require.Equal(t, http.StatusOK, r.status, "%+v", r)

	spans := rc.trace(t, callerTrace, "POST /v1/chat/completions")
	byName := map[string][]*tracepb.Span{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
	}
	req := byName["POST /v1/chat/completions"][0]
	require.Equal(t, callerSpan, hex.EncodeToString(req.ParentSpanId), "the caller's span is the parent")
	require.Equal(t, tracepb.Span_SPAN_KIND_SERVER, req.Kind)
	ra := attrs(req)
	require.Equal(t, r.requestID, ra["conclave.request_id"])
	require.NotEmpty(t, ra["conclave.org_id"])
	require.NotEmpty(t, ra["conclave.key_id"])
	require.NotContains(t, ra["conclave.key_id"], key, "the key's id, never the key")

	wf := byName["invoke_workflow conclave-standard"]
	require.Len(t, wf, 1, "one deliberation span: %v", spanNames(spans))
	require.Equal(t, req.SpanId, wf[0].ParentSpanId)
	wa := attrs(wf[0])
	require.Equal(t, "invoke_workflow", wa["gen_ai.operation.name"])
	require.Equal(t, "conclave-standard", wa["gen_ai.workflow.name"])
	require.Equal(t, "panel", wa["conclave.lane"])
	require.NotEmpty(t, wa["conclave.cost.billed_usd"])
	require.Equal(t, "service", wa["conclave.source"])
	for _, n := range []string{"conclave.admit", "conclave.settle"} {
		require.Len(t, byName[n], 1, "%s: %v", n, spanNames(spans))
	}

	var chats, failed, fallback int
	for _, s := range spans {
		if !strings.HasPrefix(s.Name, "chat ") {
			continue
		}
		chats++
		require.Equal(t, wf[0].SpanId, s.ParentSpanId, "a provider call is the deliberation's child")
		require.Equal(t, tracepb.Span_SPAN_KIND_CLIENT, s.Kind)
		a := attrs(s)
		require.Equal(t, "chat", a["gen_ai.operation.name"])
		require.Equal(t, "sim", a["gen_ai.provider.name"])
		require.Equal(t, strings.TrimPrefix(s.Name, "chat "), a["gen_ai.response.model"])
		require.NotEmpty(t, a["conclave.attempt"])
		require.NotContains(t, a, "gen_ai.output.messages", "content only when opted in")
		if a["conclave.attempt"] == "failed" {
			failed++
			require.Equal(t, tracepb.Status_STATUS_CODE_ERROR, s.Status.Code)
			require.NotEmpty(t, a["error.type"])
		}
		if a["conclave.fallback"] == "true" {
			fallback++
		}
	}
	require.GreaterOrEqual(t, chats, 5, "classifier, three seats, judge, synthesis: %v", spanNames(spans))
	require.Positive(t, failed, "atlas's failed attempt")
	require.Positive(t, fallback, "its backup's call")

	var traceID string
	require.NoError(t, pool.QueryRow(ctx, "SELECT coalesce(trace_id, '') FROM receipts WHERE request_id = $1", r.requestID).Scan(&traceID))
	require.Equal(t, callerTrace, traceID, "the receipt names the trace")
	_, body := get(t, p.base+"/v1/receipts/"+r.requestID, key)
	require.Contains(t, body, `"trace_id":"`+callerTrace+`"`)
	require.Eventually(t, func() bool {
		for _, l := range strings.Split(p.stderr.String(), "\n") {
			if strings.Contains(l, r.requestID) && strings.Contains(l, `"trace_id":"`+callerTrace+`"`) {
				return true
			}
		}
		return false
	}, 5*time.Second, 50*time.Millisecond, "the request's log line has its trace id")

	// An MCP deliberate call asking for progress: its message's span,
	// tools/call deliberate, continues the caller's trace, and the
	// deliberation is its child.
	const mcpTrace = "6bf92f3577b34da6a3ce929d0e0e4736"
	body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"t1"},"name":"deliberate",` +
		`"arguments":{"model":"conclave-standard","messages":[{"role":"user","content":"Should we adopt event sourcing? Compare the risks."}]}}}`
	mreq, err := http.NewRequest(http.MethodPost, p.base+"/mcp", strings.NewReader(body))
	require.NoError(t, err)
	mreq.Header.Set("Authorization", "Bearer "+key)
	mreq.Header.Set("Content-Type", "application/json")
	mreq.Header.Set("Accept", "application/json, text/event-stream")
	mreq.Header.Set("traceparent", "00-"+mcpTrace+"-00f067aa0ba902b7-01")
	mres, err := c.client.Do(mreq)
	require.NoError(t, err)
	stream, err := io.ReadAll(mres.Body)
	mres.Body.Close()
	require.NoError(t, err)
	require.Contains(t, string(stream), "notifications/progress", "progress was streamed")
	mspans := rc.trace(t, mcpTrace, "invoke_workflow conclave-standard")
	var post, call, flow *tracepb.Span
	for _, s := range mspans {
		switch s.Name {
		case "POST /mcp":
			post = s
		case "tools/call deliberate":
			call = s
		case "invoke_workflow conclave-standard":
			flow = s
		}
	}
	require.NotNil(t, post, "the HTTP request's span: %v", spanNames(mspans))
	require.Equal(t, "00f067aa0ba902b7", hex.EncodeToString(post.ParentSpanId), "the caller's span is its parent")
	require.NotNil(t, call, "the message's span: %v", spanNames(mspans))
	require.Equal(t, post.SpanId, call.ParentSpanId, "the message is the request's child")
	require.Equal(t, "tools/call", attrs(call)["mcp.method.name"])
	require.Equal(t, "deliberate", attrs(call)["gen_ai.tool.name"])
	require.Equal(t, call.SpanId, flow.ParentSpanId, "the deliberation is the message's child")

	// A tool that fails: its message's span carries the tool's code.
	body = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_receipt","arguments":{"request_id":"req_doesnotexist00000000"}}}`
	const failTrace = "7bf92f3577b34da6a3ce929d0e0e4736"
	mreq, err = http.NewRequest(http.MethodPost, p.base+"/mcp", strings.NewReader(body))
	require.NoError(t, err)
	mreq.Header.Set("Authorization", "Bearer "+key)
	mreq.Header.Set("Content-Type", "application/json")
	mreq.Header.Set("Accept", "application/json, text/event-stream")
	mreq.Header.Set("traceparent", "00-"+failTrace+"-00f067aa0ba902b7-01")
	mres, err = c.client.Do(mreq)
	require.NoError(t, err)
	refusal, err := io.ReadAll(mres.Body)
	mres.Body.Close()
	require.NoError(t, err)
	require.Contains(t, string(refusal), "receipt_not_found")
	for _, s := range rc.trace(t, failTrace, "tools/call get_receipt") {
		if s.Name == "tools/call get_receipt" {
			require.Equal(t, "receipt_not_found", attrs(s)["error.type"])
			require.Equal(t, tracepb.Status_STATUS_CODE_ERROR, s.Status.Code)
		}
	}

	// The latency histograms name the traces as exemplars (OpenMetrics):
	// REST's request latency and the MCP tool's.
	require.Eventually(t, func() bool {
		req, _ := http.NewRequest(http.MethodGet, p.operatorBase(t)+"/metrics", nil)
		req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer res.Body.Close()
		text, _ := io.ReadAll(res.Body)
		var rest, tool bool
		for _, l := range strings.Split(string(text), "\n") {
			rest = rest || strings.HasPrefix(l, `conclave_http_request_duration_seconds_bucket{route="/v1/chat/completions"`) &&
				strings.Contains(l, `trace_id="`+callerTrace+`"`)
			tool = tool || strings.HasPrefix(l, `conclave_mcp_tool_call_duration_seconds_bucket{tool="deliberate"`) &&
				strings.Contains(l, `trace_id="`+mcpTrace+`"`)
		}
		return rest && tool
	}, 5*time.Second, 100*time.Millisecond, "exemplars naming the REST call's and the MCP call's traces")

	// A refused call: its request span says why, and nothing deliberated.
	r = c.post(p.base, "/v1/chat/completions", key, `{"model":"no-such-mode","messages":[{"role":"user","content":"hi"}]}`,
		"traceparent", "00-5bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	require.Equal(t, http.StatusNotFound, r.status, "%+v", r)
	refused := rc.trace(t, "5bf92f3577b34da6a3ce929d0e0e4736", "POST /v1/chat/completions")
	require.Equal(t, r.code, attrs(refused[0])["error.type"])
	for _, s := range refused {
		require.False(t, strings.HasPrefix(s.Name, "invoke_workflow"), "no deliberation for a refused call")
	}
}

// infoConfig is reliabilityConfig logging at info: every request's line.
func infoConfig(t *testing.T, dbURL string) string {
	t.Helper()
	cfg := reliabilityConfig(t, dbURL)
	yaml, err := os.ReadFile(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cfg, []byte(strings.Replace(string(yaml), "level: warn", "level: info", 1)), 0o600))
	return cfg
}

// spanNames lists spans' names, for failure messages.
func spanNames(spans []*tracepb.Span) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name
	}
	return out
}

// A collector that is down costs spans, not calls: every call is answered
// while the exports fail, and the failed exports' spans are counted as
// dropped on /metrics once their retries give up.
func TestDeadCollectorDoesNotFailCalls(t *testing.T) {
	t.Parallel()
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close() // nothing listens there now
	g := startTraced(t, "", "OTEL_EXPORTER_OTLP_ENDPOINT="+deadURL)
	p, key, c := g.p, g.key, g.c
	for i := range 5 {
		r := c.post(p.base, "/v1/chat/completions", key, chatJSON(fmt.Sprintf("What is %d + %d?", i, i)))
		require.Equal(t, http.StatusOK, r.status, "%+v", r)
	}
	metrics := p.operatorBase(t) + "/metrics"
	require.Eventually(t, func() bool {
		_, body := get(t, metrics, "")
		for _, l := range strings.Split(body, "\n") {
			if v, ok := strings.CutPrefix(l, "conclave_trace_spans_dropped_total "); ok && v != "0" {
				return true
			}
		}
		return false
	}, 60*time.Second, 500*time.Millisecond, "the failed exports' spans are counted as dropped")
}

var minimumRe = regexp.MustCompile(`at least \$([0-9.]+)`)

// With content capture opted in: an express call's deliberation span says
// its lane and carries the caller's messages and the answer, each provider
// call its answer; a call billed above its ceiling is marked capped; and a
// test run's question job is traced in the batch's own trace (its id is
// the batch id), with a span per answer and per judgment.
func TestTracesExpressCappedAndRuns(t *testing.T) {
	t.Parallel()
	rc := newOTLPReceiver(t)
	g := startTraced(t, "", "OTEL_EXPORTER_OTLP_ENDPOINT="+rc.srv.URL, "OTEL_TRACES_SAMPLER=always_on",
		"OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true")
	ctx, p, pool, key, c := context.Background(), g.p, g.pool, g.key, g.c
	traceOf := func(requestID string) string {
		var id string
		require.NoError(t, pool.QueryRow(ctx, "SELECT coalesce(trace_id, '') FROM receipts WHERE request_id = $1", requestID).Scan(&id))
		require.NotEmpty(t, id, "a traced call's receipt names its trace")
		return id
	}

	r := c.post(p.base, "/v1/chat/completions", key, chatJSON("What is 2 + 2?"))
	require.Equal(t, http.StatusOK, r.status, "%+v", r)
	spans := rc.trace(t, traceOf(r.requestID), "invoke_workflow conclave-standard")
	for _, s := range spans {
		a := attrs(s)
		switch {
		case strings.HasPrefix(s.Name, "invoke_workflow"):
			require.Equal(t, "express", a["conclave.lane"])
			require.Contains(t, a["gen_ai.input.messages"], "What is 2 + 2?")
			require.Contains(t, a["gen_ai.output.messages"], `"role":"assistant"`)
		case strings.HasPrefix(s.Name, "chat ") && a["conclave.attempt"] == "won":
			require.Contains(t, a["gen_ai.output.messages"], `"parts"`, "content captured: %s", s.Name)
		}
	}

	// Capped: the ceiling the refusal names, and answers far longer than
	// it pays for.
	question := "Should we adopt trunk-based development? Compare the risks and recommend a strategy. [[sim: tokens_out=2000]]"
	body := func(ceiling string) string {
		return strings.TrimSuffix(chatJSON(question), "}") + `,"panel":{"max_cost_usd":` + ceiling + `}}`
	}
	r = c.post(p.base, "/v1/chat/completions", key, body("0.000001"))
	m := minimumRe.FindStringSubmatch(r.message)
	require.Len(t, m, 2, "%+v", r)
	r = c.post(p.base, "/v1/chat/completions", key, body(m[1]))
	require.Equal(t, http.StatusOK, r.status, "%+v", r)
	for _, s := range rc.trace(t, traceOf(r.requestID), "invoke_workflow conclave-standard") {
		if strings.HasPrefix(s.Name, "invoke_workflow") {
			require.Equal(t, "true", attrs(s)["conclave.capped"])
		}
	}

	// A test run: its question's job in the batch's trace.
	launch := jsonOf(t, "POST", p.base+"/v1/tests", key, `{"model":"conclave-standard","buckets":{"light":1}}`, http.StatusOK)
	batchID := launch["batch_id"].(string)
	var got map[string]int
	require.Eventually(t, func() bool {
		got = map[string]int{}
		for _, s := range rc.trace(t, strings.ReplaceAll(batchID, "-", ""), "judge nova_pro") {
			got[s.Name]++
			if s.Name == "run_question test" {
				require.Equal(t, batchID, attrs(s)["conclave.batch_id"])
			}
		}
		return got["run_question test"] >= 1 && got["answer mode"] >= 1 && got["answer baseline"] >= 1 &&
			got["judge nova_pro"] >= 1 && got["judge mistral_large"] >= 1 && got["judge llama4_maverick"] >= 1
	}, 30*time.Second, 100*time.Millisecond, "the question's job, its two answers and three judgments: %v", got)
}

// traceHedgeMode is a panel whose round closes 2 s after quorum and whose
// slow primaries are hedged after 1 s (half of that, for engines with no
// history): its second seat's primary and backup are made slow, so that
// the backup is started beside the primary and both are cut as stragglers.
const traceHedgeMode = `
modes:
  - key: trace-hedge
    id: trace-hedge
    ticker: CNCL:TRHG
    name: Trace hedge
    description: A panel that hedges and cuts stragglers quickly, for the tracing test.
    use_when: Never; it exists for a test.
    price_tier: standard
    includes_deliberation: true
    seats:
      plus:
        - {engine: sim/atlas, backup: sim/gemini-flash}
        - {engine: sim/sonnet, backup: sim/gemini-pro}
        - {engine: sim/gemini-flash, backup: sim/atlas}
    staff:
      classifier: {engine: sim/swift}
      judge: {engine: sim/opus}
      synthesis: {engine: sim/atlas-frontier}
    critique: never
    max_rounds: 1
    quorum: 2
    straggler_deadline: 2s
    express_threshold: 0
    cost_ceiling_usd: 1.50
    pricing:
      surcharge_usd: 0.15
`

// A hedge and its straggler in the trace: the slow seat's primary and the
// backup hedged beside it are both drawn, both cut when the round closed
// on quorum, the backup marked hedged.
func TestTracesAHedgeAndAStraggler(t *testing.T) {
	t.Parallel()
	rc := newOTLPReceiver(t)
	g := startTraced(t, traceHedgeMode, "OTEL_EXPORTER_OTLP_ENDPOINT="+rc.srv.URL, "OTEL_TRACES_SAMPLER=always_on")
	p, pool, key, c := g.p, g.pool, g.key, g.c
	body := `{"model":"trace-hedge","messages":[{"role":"user","content":"Should we move to event sourcing? Compare the risks. [[sim@sonnet: delay=1000s]] [[sim@gemini-pro: delay=1000s]]"}]}`
	r := c.post(p.base, "/v1/chat/completions", key, body)
	require.Equal(t, http.StatusOK, r.status, "%+v", r)
	var traceID string
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT trace_id FROM receipts WHERE request_id = $1", r.requestID).Scan(&traceID))
	seat2 := map[string]map[string]string{}
	for _, s := range rc.trace(t, traceID, "invoke_workflow trace-hedge") {
		if a := attrs(s); a["conclave.seat"] == "seat-2" {
			seat2[s.Name] = a
		}
	}
	require.Contains(t, seat2, "chat sim/sonnet", "the slow primary: %v", seat2)
	require.Contains(t, seat2, "chat sim/gemini-pro", "its hedge: %v", seat2)
	require.Equal(t, "true", seat2["chat sim/gemini-pro"]["conclave.hedged"])
	for name, a := range seat2 {
		require.Contains(t, []string{"cut", "cancelled"}, a["conclave.attempt"], "%s: a straggler", name)
	}
}

// `conclave traces` receives a gateway's traces on loopback and prints
// each as a tree: the request, under it the deliberation, under that its
// provider calls; and what is still gathering when it stops.
func TestTracesCommandPrintsTheTree(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut logtest.Buffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"traces", "--addr", addr, "--quiet", "500ms"}, &out, &errOut) }()
	require.Eventually(t, func() bool { return strings.Contains(errOut.String(), "receiving OTLP/HTTP traces on http://"+addr) },
		10*time.Second, 20*time.Millisecond)

	g := startTraced(t, "", "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+addr)
	p, key, c := g.p, g.key, g.c
	r := c.post(p.base, "/v1/chat/completions", key, chatJSON("Should we adopt trunk-based development? Compare the risks."))
	require.Equal(t, http.StatusOK, r.status, "%+v", r)
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "POST /v1/chat/completions  SERVER") },
		20*time.Second, 50*time.Millisecond, "the trace printed: %s", out.String())
	text := out.String()
	lines := strings.Split(text, "\n")
	indent := func(prefix string) int {
		for _, l := range lines {
			if strings.HasPrefix(strings.TrimLeft(l, " "), prefix) {
				return len(l) - len(strings.TrimLeft(l, " "))
			}
		}
		t.Fatalf("no line %q in:\n%s", prefix, text)
		return 0
	}
	require.Less(t, indent("POST /v1/chat/completions"), indent("invoke_workflow conclave-standard"), text)
	require.Less(t, indent("invoke_workflow conclave-standard"), indent("chat sim/"), text)
	require.Contains(t, text, `conclave.request_id="`+r.requestID+`"`)
	t.Log("\n" + text)
	cancel()
	require.NoError(t, <-done)
}
