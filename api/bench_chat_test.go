package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/conclavehq/conclave/adapters/sim"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/benchtest"
	"github.com/conclavehq/conclave/core/deliberate"
	"github.com/conclavehq/conclave/core/telemetry"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/heapfloor"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
	"github.com/conclavehq/conclave/plugins/egress"
	"github.com/conclavehq/conclave/plugins/protocol/direct"
	"github.com/conclavehq/conclave/plugins/providers"
	"github.com/conclavehq/conclave/policies"
)

// benchTwoRoundsMode is the mode the chat benchmark adds to the built-in
// catalog: a copy of conclave-standard (seats atlas, sonnet and
// gemini-flash on tier plus) that always critiques, for two rounds, and has
// no express lane.
const benchTwoRoundsMode = "bench-two-rounds"

// chatBench is a server that deliberates for real, like setupChat's: the
// engine, the simulated provider through the real adapters and egress,
// Postgres. Its simulator is the caller's.
type chatBench struct {
	srv   *httptest.Server
	store *pgstore.Store
	org   *core.Org
	key   string
	prov  *providers.Providers
}

// setupChatBenchOn serves the API deliberating for real — the engine, the
// in-process simulated provider configured as simCfg through the real
// adapters and egress — on the database of pool.
func setupChatBenchOn(b *testing.B, simCfg sim.Config, pool *pgxpool.Pool) *chatBench {
	b.Helper()
	cfg, err := config.Builtin()
	if err != nil {
		b.Fatal(err)
	}
	cfg.Modes = append(cfg.Modes, twoRoundsBenchMode(cfg.Modes[0]), expressBenchMode(cfg.Modes[0]))
	catalog, err := cfg.Catalog()
	if err != nil {
		b.Fatal(err)
	}
	prov, err := providers.Start(context.Background(), providers.Config{Catalog: catalog, Simulator: simCfg})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { prov.Stop(context.Background()) })
	return serveChatBench(b, catalog, prov, pool, telemetry.Telemetry{})
}

// setupChatBenchApart is setupChatBenchOn with the simulated provider in a
// child process (simChild), as a real provider is another machine: this
// process spends only the gateway's CPU. The catalogue is the built-in
// one's engines that speak the OpenAI, Anthropic and Gemini formats,
// pointed at the child, and its modes conclave-standard and the two
// benchmark modes; no judges (no test runs here).
func setupChatBenchApart(b *testing.B, simCfg sim.Config) (*chatBench, *simChild) {
	b.Helper()
	catalog, prov, child := benchProvidersApart(b, simCfg)
	return serveChatBench(b, catalog, prov, pgtest.NewPool(b), telemetry.Telemetry{}), child
}

// benchProvidersApart starts the simulator in a child process and the
// providers of the built-in engines pointed at it, with the benchmark
// modes in the catalogue.
func benchProvidersApart(b *testing.B, simCfg sim.Config) (*core.Catalog, *providers.Providers, *simChild) {
	b.Helper()
	child := startSimChild(b, simCfg)
	cfg, err := config.Builtin()
	if err != nil {
		b.Fatal(err)
	}
	paths := map[string]string{"openai": "/openai/v1", "anthropic": "/anthropic", "gemini": "/gemini"}
	var engines []config.Engine
	for _, e := range cfg.Engines {
		if path, ok := paths[e.Adapter]; ok && e.Endpoint == providers.SimEndpoint {
			e.Endpoint, e.Credential = child.url+path, simChildKeyEnv
			engines = append(engines, e)
		}
	}
	b.Setenv(simChildKeyEnv, child.key)
	standard := cfg.Modes[0]
	cfg.Engines, cfg.Judges = engines, nil
	cfg.Modes = []config.Mode{standard, twoRoundsBenchMode(standard), expressBenchMode(standard)}
	catalog, err := cfg.Catalog()
	if err != nil {
		b.Fatal(err)
	}
	// CONCLAVE_BENCH_EGRESS_H2C=1 reaches the simulator over unencrypted
	// HTTP/2 (egress.h2c) instead of HTTP/1.1.
	h2 := os.Getenv("CONCLAVE_BENCH_EGRESS_H2C") == "1"
	prov, err := providers.Start(context.Background(), providers.Config{Catalog: catalog, Egress: egress.Config{H2C: h2}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { prov.Stop(context.Background()) })
	return catalog, prov, child
}

// twoRoundsBenchMode is base (conclave-standard) critiquing always, for
// two rounds, with no express lane.
func twoRoundsBenchMode(base config.Mode) config.Mode {
	two := base
	two.Key, two.ID, two.Ticker, two.Name = benchTwoRoundsMode, benchTwoRoundsMode, "CNCL:BTWO", "Bench two rounds"
	two.Critique, two.MaxRounds, two.ExpressThreshold = core.CritiqueAlways, 2, 0
	return two
}

// serveChatBench serves the API deliberating on catalog's engines through
// prov, on pool's database, with a key whose limits sit far above the load.
func serveChatBench(b *testing.B, catalog *core.Catalog, prov *providers.Providers, pool *pgxpool.Pool, tel telemetry.Telemetry) *chatBench {
	b.Helper()
	benchHeapFloor(b)
	ctx := context.Background()
	engine, err := deliberate.New(deliberate.Config{Catalog: catalog, Caller: prov, Judge: direct.New()})
	if err != nil {
		b.Fatal(err)
	}
	authz, err := policies.New(ctx, policies.Config{})
	if err != nil {
		b.Fatal(err)
	}
	store := pgstore.New(pool)
	// The deployment's defaults where they matter to speed: keys cached for
	// 3 s.
	pt := &parts{store: store, authz: authz, catalog: catalog, deliberator: engine,
		registry: prometheus.NewRegistry(), limits: limits{KeyCacheTTL: 3 * time.Second}, telemetry: tel}
	h, _ := pt.serve(b)
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	org, _, err := store.CreateOrg(ctx, &core.CreateOrgParams{Name: "Bench Org"})
	if err != nil {
		b.Fatal(err)
	}
	cb := &chatBench{srv: srv, store: store, org: org, prov: prov}
	// Limits far above the load: these benchmarks measure the engine, not
	// the rails.
	cb.key = (&testBundle{store: store, org: org}).newKey(b, &core.CreateKeyParams{RPM: 10_000_000, Concurrency: 1_000_000})
	return cb
}

// heapFloorSet is whether a benchmark of this process has set serve's
// heap floor; benchmarks run one at a time.
var heapFloorSet bool

// benchHeapFloor paces the collector of this process, the gateway's, as
// serve paces its own (server.heap_floor_mib), until b ends.
// CONCLAVE_BENCH_HEAP_FLOOR_MIB sets another floor (0: none, GOGC alone).
func benchHeapFloor(b *testing.B) {
	if heapFloorSet {
		return
	}
	cfg, err := config.Builtin()
	if err != nil {
		b.Fatal(err)
	}
	mib := cfg.Server.HeapFloorMiB
	if v := os.Getenv("CONCLAVE_BENCH_HEAP_FLOOR_MIB"); v != "" {
		if mib, err = strconv.Atoi(v); err != nil || mib < 0 {
			b.Fatalf("CONCLAVE_BENCH_HEAP_FLOOR_MIB=%q: want a number of MiB, 0 or more", v)
		}
	}
	undo := heapfloor.Set(int64(mib) << 20)
	heapFloorSet = true
	b.Cleanup(func() { undo(); heapFloorSet = false })
}

// benchPanel is what the benchmark reads of an answer's panel block.
type benchPanel struct {
	Lane   string  `json:"lane"`
	Rounds float64 `json:"rounds"`
}

// postChat sends one chat completion to the gateway at url with key and
// returns the status and the panel's lane and rounds, all that the load
// generator (loadChild) checks of an answer.
func postChat(ctx context.Context, client *http.Client, url, key, body string) (int, benchPanel, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return 0, benchPanel{}, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	// Every call is a new request: the same body would otherwise be
	// deduplicated by its derived idempotency key and replayed.
	req.Header.Set("Idempotency-Key", core.NewID("bench"))
	res, err := client.Do(req)
	if err != nil {
		return 0, benchPanel{}, err
	}
	raw, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return res.StatusCode, benchPanel{}, err
	}
	if res.StatusCode != 200 {
		return res.StatusCode, benchPanel{}, fmt.Errorf("status %d: %s", res.StatusCode, raw)
	}
	var out struct {
		Panel benchPanel `json:"panel"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return res.StatusCode, benchPanel{}, fmt.Errorf("decoding %s: %w", raw, err)
	}
	return res.StatusCode, out.Panel, nil
}

// cpuTime is this process's CPU time so far, user plus system.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkChatCPU measures the gateway's CPU time (user + system,
// getrusage of this process) per chat completion, with the simulated
// provider in a child process (setupChatBenchApart) at near-zero latency
// (TimeScale 1e-6), calls sent one at a time over loopback HTTP by a load
// generator in another child process (loadChild), in two phases of b.N
// calls each in the same run, taken in turns:
//
//   - deliberation: a full panel — classifier, three seats, judge, a second
//     (critique) round of three seats, judge, synthesis — on a mode that
//     always critiques for two rounds; gemini-flash always dissents, so
//     round one never converges. The benchmark fails unless every call is
//     a 200 that ran exactly two rounds.
//   - express: "What is 2 + 2?" on conclave-standard, which the classifier
//     sends down the express lane (classifier and one seat).
//
// Each phase makes at least chatCPUMinCalls calls whatever b.N (but for
// the smoke form): make bench's one-second default gave about 100, and
// ratios from 2.7× to 3.4× from run to run. The phases alternate in
// chatCPUTurns turns, the one going first swapping each turn, so that a
// drift of the machine's speed over the run falls on both alike. The
// collector is not forced between turns; its work falls in the turns whose
// allocations start its cycles, as it would in service, but a cycle the
// deliberations start finishes in the express turn that follows, so the
// turns are long enough (400 calls) for that tail to be a small part of
// one: in turns of 100 the express call measured 4–7% dearer and the ratio
// 3–6% lower (docs/benchmarks.md).
//
// The gateway's figure is everything this process spends: the API
// (admission, policy, hold and settle through pgx, receipt), the engine,
// the adapters and egress. The caller's CPU and the simulator's (the
// children's) and PostgreSQL's (another process) are not in it; the
// simulator's is reported beside it.
//
// Reported: deliberation_cpu_ms and express_cpu_ms (goals: under 5 ms, and
// at most 2.5× the express call's), deliberation_over_express_x,
// deliberation_allocs and express_allocs (heap allocations per call),
// deliberation_alloc_KiB and express_alloc_KiB (heap bytes allocated per
// call, which the collector's work is proportional to),
// sim_cpu_ms (the child simulator's per deliberation) and engine_calls
// (the simulator's model calls per deliberation).
//
// Egress speaks HTTP/1.1 to the simulator; CONCLAVE_BENCH_EGRESS_H2C=1
// makes it speak unencrypted HTTP/2 (egress.h2c, package h2c's transport).
func BenchmarkChatCPU(b *testing.B) {
	cb, child := setupChatBenchApart(b, sim.Config{
		TimeScale: 1e-6,
		Engines:   map[string]sim.EngineProfile{"gemini-flash": {Dissent: 1}},
	})
	if _, err := cb.store.AddFunds(context.Background(), &core.AddFundsParams{OrgID: cb.org.ID, Amount: 1_000_000 * core.MicrosPerUSD, Memo: "bench"}); err != nil {
		b.Fatal(err)
	}
	type phase struct {
		name          string
		cpu, simCPU   time.Duration
		allocs, bytes uint64
		calls         int
	}
	phases := []*phase{{name: "deliberation"}, {name: "express"}}
	load := startLoadChild(b, cb, chatPhases())
	for _, p := range phases { // warm: connections, caches, the first receipt of each
		load.run(b, p.name, 3)
	}
	var ms runtime.MemStats
	measure := func(p *phase, n int) {
		sim0 := child.read(b)
		runtime.ReadMemStats(&ms)
		mallocs0, bytes0 := ms.Mallocs, ms.TotalAlloc
		cpu0 := cpuTime(b)
		load.run(b, p.name, n)
		p.cpu += cpuTime(b) - cpu0
		runtime.ReadMemStats(&ms)
		p.allocs += ms.Mallocs - mallocs0
		p.bytes += ms.TotalAlloc - bytes0
		sim1 := child.read(b)
		p.simCPU += sim1.CPU - sim0.CPU
		p.calls += sim1.Calls - sim0.Calls
	}
	calls := b.N
	if !benchtest.Smoking() {
		calls = max(calls, chatCPUMinCalls)
	}
	b.ResetTimer()
	t0 := time.Now()
	turns := min(chatCPUTurns, calls)
	for t := range turns {
		n := calls / turns
		if t < calls%turns {
			n++
		}
		for k := range phases {
			measure(phases[(k+t)%len(phases)], n)
		}
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(calls) }
	deliberation, express := phases[0], phases[1]
	// One deliberation and one express call an iteration, however many ran.
	b.ReportMetric(float64(time.Since(t0).Nanoseconds())/float64(calls), "ns/op")
	b.ReportMetric(float64(deliberation.bytes+express.bytes)/float64(calls), "B/op")
	b.ReportMetric(float64(deliberation.allocs+express.allocs)/float64(calls), "allocs/op")
	b.ReportMetric(per(deliberation.cpu), "deliberation_cpu_ms")
	b.ReportMetric(per(express.cpu), "express_cpu_ms")
	b.ReportMetric(float64(deliberation.cpu)/float64(express.cpu), "deliberation_over_express_x")
	b.ReportMetric(float64(deliberation.allocs)/float64(calls), "deliberation_allocs")
	b.ReportMetric(float64(express.allocs)/float64(calls), "express_allocs")
	b.ReportMetric(float64(deliberation.bytes)/1024/float64(calls), "deliberation_alloc_KiB")
	b.ReportMetric(float64(express.bytes)/1024/float64(calls), "express_alloc_KiB")
	b.ReportMetric(per(deliberation.simCPU), "sim_cpu_ms")
	b.ReportMetric(float64(deliberation.calls)/float64(calls), "engine_calls")
}

// chatCPUTurns is how many turns BenchmarkChatCPU's phases take, and
// chatCPUMinCalls the fewest calls each phase makes.
const (
	chatCPUTurns    = 10
	chatCPUMinCalls = 4000
)

// benchExpressMode answers every question on the express lane with the
// heuristic classifier (no classifier engine): a billed call whose only
// model call is the express seat's.
const benchExpressMode = "bench-express"

// expressBenchMode is conclave-standard answering everything on the express
// lane with the heuristic classifier.
func expressBenchMode(base config.Mode) config.Mode {
	m := base
	m.Key, m.ID, m.Ticker, m.Name = benchExpressMode, benchExpressMode, "CNCL:BEXP", "Bench express"
	m.Staff = maps.Clone(base.Staff)
	delete(m.Staff, "classifier")
	m.ExpressThreshold = 1
	return m
}
