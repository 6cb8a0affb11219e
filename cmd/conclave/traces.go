package main

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// tracesCmd runs an OTLP/HTTP trace receiver on loopback and prints each
// trace it receives as a tree, a span a line: for reading what a gateway
// traces without a collector (docs/observability.md). A trace is printed
// once no span of it has arrived for --quiet.
func tracesCmd(ctx context.Context, fs *flag.FlagSet, args []string, cio cmdIO) error {
	addr := fs.String("addr", "127.0.0.1:4318", "listen on `HOST:PORT`")
	quiet := fs.Duration("quiet", 2*time.Second, "print a trace once it has been quiet for `D`")
	if err := parse(fs, args); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	p := &tracePrinter{out: cio.stdout, quiet: *quiet, traces: map[string]*pendingTrace{}}
	srv := &http.Server{Handler: http.HandlerFunc(p.receive), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(cio.stderr, "receiving OTLP/HTTP traces on http://%s (set OTEL_EXPORTER_OTLP_ENDPOINT=http://%s)\n", ln.Addr(), ln.Addr())
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	p.flushAll()
	return nil
}

// tracePrinter gathers spans by trace and prints a trace's tree once it is
// quiet.
type tracePrinter struct {
	out    io.Writer
	quiet  time.Duration
	mu     sync.Mutex
	traces map[string]*pendingTrace
}

type pendingTrace struct {
	spans []*tracepb.Span
	timer *time.Timer
}

// receive answers one OTLP/HTTP export (protobuf).
func (p *tracePrinter) receive(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 16<<20))
	var req coltrace.ExportTraceServiceRequest
	if err != nil || r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
		http.Error(w, "send an OTLP/HTTP protobuf export to POST /v1/traces", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				id := hex.EncodeToString(s.TraceId)
				t := p.traces[id]
				if t == nil {
					t = &pendingTrace{}
					p.traces[id] = t
					t.timer = time.AfterFunc(p.quiet, func() { p.flush(id) })
				} else {
					t.timer.Reset(p.quiet)
				}
				t.spans = append(t.spans, s)
			}
		}
	}
	p.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// flush prints the trace id's tree and forgets it.
func (p *tracePrinter) flush(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.traces[id]
	if t == nil {
		return
	}
	delete(p.traces, id)
	printTrace(p.out, id, t.spans)
}

// flushAll prints every trace still gathering.
func (p *tracePrinter) flushAll() {
	p.mu.Lock()
	ids := make([]string, 0, len(p.traces))
	for id, t := range p.traces {
		t.timer.Stop()
		ids = append(ids, id)
	}
	p.mu.Unlock()
	for _, id := range ids {
		p.flush(id)
	}
}

// printTrace writes the spans of one trace as a tree: each span under its
// parent, siblings by start time; a span whose parent is not among them
// (the caller's, or the batch's) at the top.
func printTrace(w io.Writer, id string, spans []*tracepb.Span) {
	byID := map[string]bool{}
	for _, s := range spans {
		byID[hex.EncodeToString(s.SpanId)] = true
	}
	children := map[string][]*tracepb.Span{}
	for _, s := range spans {
		parent := hex.EncodeToString(s.ParentSpanId)
		if !byID[parent] {
			parent = ""
		}
		children[parent] = append(children[parent], s)
	}
	fmt.Fprintf(w, "trace %s (%d spans)\n", id, len(spans))
	var walk func(parent, indent string)
	walk = func(parent, indent string) {
		kids := children[parent]
		sort.Slice(kids, func(i, j int) bool { return kids[i].StartTimeUnixNano < kids[j].StartTimeUnixNano })
		for _, s := range kids {
			d := time.Duration(s.EndTimeUnixNano - s.StartTimeUnixNano)
			kind := strings.TrimPrefix(s.Kind.String(), "SPAN_KIND_")
			status := ""
			if s.Status != nil && s.Status.Code == tracepb.Status_STATUS_CODE_ERROR {
				status = " ERROR"
			}
			fmt.Fprintf(w, "%s%s  %s %s%s  %s\n", indent, s.Name, kind, d.Round(time.Microsecond), status, spanAttrs(s.Attributes))
			walk(hex.EncodeToString(s.SpanId), indent+"  ")
		}
	}
	walk("", "  ")
}

// spanAttrs formats attributes as key=value, sorted, content left out
// (too long for a line).
func spanAttrs(kvs []*commonpb.KeyValue) string {
	parts := make([]string, 0, len(kvs))
	for _, kv := range kvs {
		if strings.HasSuffix(kv.Key, ".messages") {
			parts = append(parts, kv.Key+"=…")
			continue
		}
		var v string
		switch x := kv.Value.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			v = strconv.Quote(x.StringValue)
		case *commonpb.AnyValue_BoolValue:
			v = strconv.FormatBool(x.BoolValue)
		case *commonpb.AnyValue_IntValue:
			v = strconv.FormatInt(x.IntValue, 10)
		case *commonpb.AnyValue_DoubleValue:
			v = strconv.FormatFloat(x.DoubleValue, 'f', -1, 64)
		case *commonpb.AnyValue_ArrayValue:
			var items []string
			for _, e := range x.ArrayValue.Values {
				items = append(items, e.GetStringValue())
			}
			v = "[" + strings.Join(items, ",") + "]"
		}
		parts = append(parts, kv.Key+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}
