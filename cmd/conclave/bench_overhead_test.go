package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conclavehq/conclave/internal/loadtest"
	"github.com/conclavehq/conclave/internal/pgtest"
)

// overheadMode is the overhead benchmark's mode: conclave-standard's seats
// and staff without a classifier engine and with an express threshold of 1,
// so every question is answered on the express lane by the heuristic
// classifier: a billed call whose only model call is the express seat's.
const overheadMode = "bench-express"

// BenchmarkServeOverhead measures what Conclave adds to a model call, as
// deployed: `conclave serve` in a process of its own, with the built-in
// configuration apart from its engines and its one mode (its request log
// included), on a durable PostgreSQL (a throwaway cluster whose synchronous
// commits wait for the disk, like the managed cluster `make run` starts);
// `conclave sim`, the simulated provider answering at once
// (--time-scale 1e-6), in a second process; this benchmark, the load
// generator, in a third. api's BenchmarkGatewayOverhead times the same call
// with all three in one process.
//
// A billed express call through the gateway (authentication, policy, input
// limit, admission in one trip to PostgreSQL — rate, concurrency slot,
// idempotency claim, hold — the express seat's call through adapter and
// egress to the simulator, the bill, settlement with the receipt in one
// more trip, the response) is timed against a direct call to the same
// simulated engine, at fixed open-loop arrival rates
// (loadtest.OverheadSweep, whose figures it reports), and it adds the
// gateway process's CPU per call in the measured window
// (gateway_cpu_ms/call).
//
// CONCLAVE_BENCH_OVERHEAD_WINDOW changes the window (default 6s),
// CONCLAVE_BENCH_OVERHEAD_RATES the rates (say "500"), and
// CONCLAVE_BENCH_GATEWAY_ENV adds variables to the gateway's environment
// alone (say "GOMAXPROCS=1").
func BenchmarkServeOverhead(b *testing.B) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		b.Fatal("the overhead benchmark reads the gateway's CPU time from /proc: ", err)
	}
	simURL := startSim(b, "--time-scale", "0.000001")
	dbURL := pgtest.NewDurableDatabase(b)
	key := inFlightKey(b, dbURL)
	dir := b.TempDir()
	cfgPath := filepath.Join(dir, "conclave.yaml")
	if err := os.WriteFile(cfgPath, []byte(overheadConfig(simURL)), 0o600); err != nil {
		b.Fatal(err)
	}
	env := append([]string{"DATABASE_URL=" + dbURL, "CONCLAVE_BENCH_SIM_KEY=bench"}, strings.Fields(os.Getenv("CONCLAVE_BENCH_GATEWAY_ENV"))...)
	gw := startServe(b, dir, env, "--config", cfgPath)
	b.Cleanup(func() { gw.stop(b) })
	pid := gw.cmd.Process.Pid

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4096, IdleConnTimeout: time.Minute}, Timeout: time.Minute}
	b.Cleanup(client.CloseIdleConnections)
	run := time.Now().UnixNano() // idempotency keys of this run
	direct := func(i int) error {
		body := `{"model":"atlas","messages":[{"role":"user","content":"What is 2 + 2? (` + strconv.Itoa(i) + `)"}],"max_tokens":512}`
		req, _ := http.NewRequest("POST", simURL+"/openai/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer bench")
		req.Header.Set("Content-Type", "application/json")
		return loadtest.SendOK(client, req)
	}
	var calls atomic.Int64 // every gateway call has its own idempotency key
	gateway := func(i int) error {
		n := calls.Add(1)
		req, _ := http.NewRequest("POST", gw.base+"/v1/chat/completions",
			strings.NewReader(chatRequestBody(overheadMode, fmt.Sprintf("What is 2 + 2? (%d)", i))))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", fmt.Sprintf("overhead-%d-%d", run, n))
		return loadtest.SendOK(client, req)
	}
	// Both paths answer before anything is timed.
	if err := direct(-1); err != nil {
		b.Fatal("direct call: ", err)
	}
	if err := gateway(-1); err != nil {
		b.Fatal("gateway call: ", err)
	}
	loadtest.OverheadSweep(b, loadtest.Sweep{
		Window:  envDuration(b, "CONCLAVE_BENCH_OVERHEAD_WINDOW", 6*time.Second),
		Rates:   envCounts(b, "CONCLAVE_BENCH_OVERHEAD_RATES", nil), // nil: loadtest.DefaultRates
		Direct:  direct,
		Gateway: gateway,
		Around: func(b *testing.B, _ int, run func() loadtest.Result) loadtest.Result {
			cpu0 := procCPU(b, pid)
			g := run()
			b.ReportMetric(loadtest.MS(procCPU(b, pid)-cpu0)/float64(max(g.N, 1)), "gateway_cpu_ms/call")
			return g
		},
	})
}

// overheadConfig is the gateway's conclave.yaml: the built-in settings, the
// engines the mode uses pointed at the simulator at simURL, and the mode.
func overheadConfig(simURL string) string {
	return fmt.Sprintf(`%[2]smodes:
  - key: %[1]s
    id: %[1]s
    ticker: CNCL:BEXP
    name: Bench express
    description: conclave-standard on the express lane for every question, for the overhead benchmark.
    use_when: Never; it exists for the benchmark.
    price_tier: standard
    includes_deliberation: true
    seats:
      plus:
        - {engine: sim/atlas, backup: sim/gemini-flash}
        - {engine: sim/sonnet, backup: sim/atlas}
        - {engine: sim/gemini-flash, backup: sim/sonnet}
    staff:
      judge: {engine: sim/sonnet, backup: sim/atlas}
      synthesis: {engine: sim/atlas, backup: sim/sonnet}
    critique: deep
    max_rounds: 2
    quorum: 2
    straggler_deadline: 20s
    express_threshold: 1
    cost_ceiling_usd: 1.50
    pricing:
      surcharge_by_depth: {light: 0.05, medium: 0.10, deep: 0.15}
      surcharge_usd: 0.15
`, overheadMode, simEngines(simURL, "sim/atlas", "sim/sonnet", "sim/gemini-flash"))
}

func envDuration(b *testing.B, name string, def time.Duration) time.Duration {
	env := os.Getenv(name)
	if env == "" {
		return def
	}
	d, err := time.ParseDuration(env)
	if err != nil || d <= 0 {
		b.Fatalf("%s: %q is not a positive duration", name, env)
	}
	return d
}

// procCPU is the user and system CPU time the process pid has used.
func procCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command's closing parenthesis; utime and stime
	// are the 14th and 15th of the line, in clock ticks (USER_HZ, 100).
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("reading /proc/%d/stat: %q", pid, s)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
