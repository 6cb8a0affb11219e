package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/mcp"
)

// BenchmarkDeliberateOverMCP measures what the tool server adds to a
// deliberation: the same billed deliberation (conclave-standard's panel on
// one question, every simulated model call answering at once, time scale
// 1e-6) as a tools/call of deliberate and as POST /v1/chat/completions, on
// one server, one after the other in each iteration (the order alternating),
// each with a fresh idempotency key so that every call runs and bills. Both
// carriers call the same core service; the difference is the JSON-RPC
// layer, its argument mapping and the tool result's encoding.
//
// Reported: rest_p50_ms and mcp_p50_ms (p90 likewise); overhead_p50_ms,
// the median over iterations of the MCP call's time minus the REST call's;
// and overhead_p50_pct, that overhead as a share of the REST call's median.
func BenchmarkDeliberateOverMCP(b *testing.B) {
	tb := setup(b, func(o *setupOpts) { o.timeScale, o.rpm = 1e-6, 1_000_000 })
	ctx := context.Background()
	if _, err := tb.store.AddFunds(ctx, &core.AddFundsParams{OrgID: tb.org.ID, Amount: 1_000_000 * core.MicrosPerUSD, Memo: "bench"}); err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Timeout: time.Minute}
	send := func(path, body string, headers ...string) {
		req, _ := http.NewRequest(http.MethodPost, tb.base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tb.key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		res, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || strings.Contains(string(raw), `"isError":true`) {
			b.Fatalf("%s: %d %s", path, res.StatusCode, raw)
		}
	}
	msgs := messages(question)
	rest := func() {
		body, _ := json.Marshal(map[string]any{"model": "conclave-standard", "messages": msgs})
		send("/v1/chat/completions", string(body), "Idempotency-Key", core.NewID("bench"))
	}
	tool := func() {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
			"name": "deliberate", "arguments": map[string]any{"model": "conclave-standard", "messages": msgs},
			"_meta": map[string]any{"conclave/idempotency-key": core.NewID("bench")}}})
		send(mcp.Path, string(body))
	}
	timed := func(f func()) time.Duration {
		start := time.Now()
		f()
		return time.Since(start)
	}
	for range 10 { // warm the engine's statistics, the pools and the connections
		rest()
		tool()
	}
	restTimes, mcpTimes := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			restTimes = append(restTimes, timed(rest))
			mcpTimes = append(mcpTimes, timed(tool))
		} else {
			mcpTimes = append(mcpTimes, timed(tool))
			restTimes = append(restTimes, timed(rest))
		}
	}
	b.StopTimer()
	// The overhead is read from each iteration's pair (MCP minus REST, run
	// back to back), so that drift across the run — the database warming,
	// another process on the cores — cancels out of it.
	diffs := make([]time.Duration, len(restTimes))
	for i := range restTimes {
		diffs[i] = mcpTimes[i] - restTimes[i]
	}
	for _, q := range []struct {
		name string
		p    float64
	}{{"p50", 0.50}, {"p90", 0.90}} {
		b.ReportMetric(ms(quantile(restTimes, q.p)), "rest_"+q.name+"_ms")
		b.ReportMetric(ms(quantile(mcpTimes, q.p)), "mcp_"+q.name+"_ms")
	}
	overhead := quantile(diffs, 0.50)
	b.ReportMetric(ms(overhead), "overhead_p50_ms")
	b.ReportMetric(100*float64(overhead)/float64(quantile(restTimes, 0.50)), "overhead_p50_pct")
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// quantile is the q-th quantile of ds (nearest rank).
func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
