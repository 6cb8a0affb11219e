package api_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/conclavehq/conclave/adapters/sim"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/telemetry"
	"github.com/conclavehq/conclave/internal/pgtest"
	"github.com/conclavehq/conclave/internal/tracing"
)

// BenchmarkTracingCost measures what tracing costs a deliberation: the
// gateway's CPU per deliberation (BenchmarkChatCPU's two-round panel, the
// simulator and the callers in child processes) under three telemetries,
// each serving its own handler on one database, in the same run:
//
//   - off: tracing off, as the deployment runs without an endpoint;
//   - noop: every span started on OpenTelemetry's no-op tracer (what a
//     build instrumented with a no-op tracer costs);
//   - on: the provider serve builds (internal/tracing) sampling every call
//     (always_on), the GenAI attributes opted in, its batcher exporting to
//     an exporter that discards the spans.
//
// The three run in turns of b.N/3 deliberations (at least one), three
// rounds, the order of the turns rotating each round and the collector run
// to its end before each turn (outside the measure), so that drift over
// the run is shared and no turn pays for the garbage of the one before.
// The billed express call (BenchmarkChatCPU's "What is 2 + 2?") is
// measured alike, in turns of its own. Reported: the CPU per call of each
// (off_cpu_ms, noop_cpu_ms, on_cpu_ms; express_off_cpu_ms, …) and the
// ratios off_over_noop_x and express_off_over_noop_x (goal: within 3%),
// on_over_off_x and express_on_over_off_x (goal: at most 1.1).
func BenchmarkTracingCost(b *testing.B) {
	catalog, prov, _ := benchProvidersApart(b, sim.Config{
		TimeScale: 1e-6,
		Engines:   map[string]sim.EngineProfile{"gemini-flash": {Dissent: 1}},
	})
	pool := pgtest.NewPool(b)
	// The provider serve builds (its sampler, its batcher), exporting to an
	// exporter that discards the spans.
	tp := tracing.NewProvider(tracetest.NewNoopExporter(), sdktrace.AlwaysSample(), nil, nil)
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	type variant struct {
		name string
		tel  telemetry.Telemetry
		load *loadChild
	}
	variants := []*variant{
		{name: "off"},
		{name: "noop", tel: telemetry.Telemetry{On: true, Tracer: noop.NewTracerProvider().Tracer(telemetry.Scope), Propagator: propagation.TraceContext{}}},
		{name: "on", tel: telemetry.Telemetry{On: true, GenAI: true, Tracer: tp.Tracer(telemetry.Scope), Propagator: propagation.TraceContext{}}},
	}
	// The workloads by metric prefix, each a phase (chatPhases) of the
	// variants' load generators (loadChild), which send the calls from a
	// process of their own as BenchmarkChatCPU's does.
	workloads := []struct{ prefix, phase string }{{"", "deliberation"}, {"express_", "express"}}
	ctx := context.Background()
	for _, v := range variants {
		cb := serveChatBench(b, catalog, prov, pool, v.tel)
		if _, err := cb.store.AddFunds(ctx, &core.AddFundsParams{OrgID: cb.org.ID, Amount: 1_000_000 * core.MicrosPerUSD, Memo: "bench"}); err != nil {
			b.Fatal(err)
		}
		v.load = startLoadChild(b, cb, chatPhases())
		for _, w := range workloads { // warm: connections, caches, the first receipt
			v.load.run(b, w.phase, 3)
		}
	}
	turn := max(b.N/3, 1)
	cpu := map[string]time.Duration{}
	b.ResetTimer()
	for round := range 3 {
		for _, w := range workloads {
			for k := range variants {
				v := variants[(k+round)%len(variants)]
				runtime.GC()
				cpu0 := cpuTime(b)
				v.load.run(b, w.phase, turn)
				cpu[w.prefix+v.name] += cpuTime(b) - cpu0
			}
		}
	}
	b.StopTimer()
	per := func(k string) float64 { return float64(cpu[k]) / float64(time.Millisecond) / float64(3*turn) }
	for _, w := range workloads {
		for _, v := range variants {
			b.ReportMetric(per(w.prefix+v.name), w.prefix+v.name+"_cpu_ms")
		}
		b.ReportMetric(per(w.prefix+"off")/per(w.prefix+"noop"), w.prefix+"off_over_noop_x")
		b.ReportMetric(per(w.prefix+"on")/per(w.prefix+"off"), w.prefix+"on_over_off_x")
	}
}
