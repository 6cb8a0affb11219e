package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conclavehq/conclave/internal/pgtest"
)

// overheadMode is the overhead benchmark's mode: conclave-standard's seats
// and staff without a classifier engine and with an express threshold of 1,
// so every question is answered on the express lane by the heuristic
// classifier: a billed call whose only model call is the express seat's.
const overheadMode = "bench-express"

// BenchmarkGatewayOverhead measures what Conclave adds to a model call, as
// deployed: `conclave serve` in a process of its own, with the built-in
// configuration apart from its engines and its one mode, on a durable
// PostgreSQL (every synchronous commit waits for the disk, as in the
// managed cluster `make run` starts) on this machine; `conclave sim` (the
// simulated provider, answering at once: --time-scale 1e-6) in another;
// this benchmark, the load generator, in a third.
//
// A billed express call through the gateway (authentication, policy, input
// limit, admission in one trip to PostgreSQL — rate, concurrency slot,
// idempotency claim, hold — the express seat's call through adapter and
// egress to the simulator, the bill, settlement with the receipt in one more
// trip, the response, the request's log line) is timed against a direct
// call to the same simulated engine, at fixed open-loop arrival rates: a
// call starts on schedule whatever the earlier ones are doing, and its
// latency counts from the schedule, so queueing shows (no coordinated
// omission). At each rate the direct calls and then the gateway calls run a
// second unmeasured (connections, pools and caches settle to the rate),
// then for the window.
//
// Reported per rate: p50/p99 of the direct call and of the Conclave call,
// overhead_p50_ms/overhead_p99_ms = Conclave minus direct (beside the goals
// at 500 calls/s: p50 ≤ 1 ms, p99 ≤ 5 ms), errors, and the gateway
// process's CPU per call (gateway_cpu_ms/call). Then the highest rate tried
// whose p99 overhead stayed under 10 ms with no errors:
// max_rate_under_10ms_p99. CONCLAVE_BENCH_OVERHEAD_WINDOW changes the
// window (default 6s) and CONCLAVE_BENCH_OVERHEAD_RATES the rates (say
// "500").
func BenchmarkGatewayOverhead(b *testing.B) {
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
	gw := startServe(b, dir, append([]string{"DATABASE_URL=" + dbURL, "CONCLAVE_BENCH_SIM_KEY=bench"}, strings.Fields(os.Getenv("CONCLAVE_BENCH_GATEWAY_ENV"))...), "--config", cfgPath)
	b.Cleanup(func() { gw.stop(b) })
	pid := gw.cmd.Process.Pid

	transport := &http.Transport{MaxIdleConnsPerHost: 4096, IdleConnTimeout: time.Minute}
	client := &http.Client{Transport: transport, Timeout: time.Minute}
	b.Cleanup(client.CloseIdleConnections)
	run := time.Now().UnixNano()
	direct := func(i int) error {
		body := `{"model":"atlas","messages":[{"role":"user","content":"What is 2 + 2? (` + strconv.Itoa(i) + `)"}],"max_tokens":512}`
		req, _ := http.NewRequest("POST", simURL+"/openai/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer bench")
		req.Header.Set("Content-Type", "application/json")
		return sendOK(client, req)
	}
	gateway := func(i int) error {
		req, _ := http.NewRequest("POST", gw.base+"/v1/chat/completions",
			strings.NewReader(chatRequestBody(overheadMode, fmt.Sprintf("What is 2 + 2? (%d)", i))))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", fmt.Sprintf("overhead-%d-%d", run, i))
		return sendOK(client, req)
	}
	// Both paths answer before anything is timed.
	if err := direct(-1); err != nil {
		b.Fatal("direct call: ", err)
	}
	if err := gateway(-1); err != nil {
		b.Fatal("gateway call: ", err)
	}

	window := envDuration(b, "CONCLAVE_BENCH_OVERHEAD_WINDOW", 6*time.Second)
	seq := 0 // call numbers never repeat: each has its own idempotency key
	next := func(call func(int) error) func(int) error {
		base := seq
		seq += 1_000_000
		return func(i int) error { return call(base + i) }
	}
	best := 0
	for _, rate := range overheadRates(b) {
		var d, g openLoopResult
		var cpu time.Duration
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) {
			openLoop(rate, time.Second, next(direct))
			d = openLoop(rate, window, next(direct))
			openLoop(rate, time.Second, next(gateway))
			cpu0 := procCPU(b, pid)
			g = openLoop(rate, window, next(gateway))
			cpu = procCPU(b, pid) - cpu0
			p50, p99 := g.q(0.50)-d.q(0.50), g.q(0.99)-d.q(0.99)
			b.ReportMetric(float64(g.elapsed.Nanoseconds())/float64(max(g.n, 1)), "ns/op")
			b.ReportMetric(ms(d.q(0.50)), "direct_p50_ms")
			b.ReportMetric(ms(d.q(0.99)), "direct_p99_ms")
			b.ReportMetric(ms(g.q(0.50)), "conclave_p50_ms")
			b.ReportMetric(ms(g.q(0.99)), "conclave_p99_ms")
			b.ReportMetric(ms(p50), "overhead_p50_ms")
			b.ReportMetric(ms(p99), "overhead_p99_ms")
			if rate == 500 {
				b.ReportMetric(1, "goal_p50_ms")
				b.ReportMetric(5, "goal_p99_ms")
			}
			b.ReportMetric(ms(cpu)/float64(max(g.n, 1)), "gateway_cpu_ms/call")
			b.ReportMetric(float64(g.errors+d.errors), "errors")
			if g.errors+d.errors > 0 {
				b.Logf("rate %d: first error: %v", rate, firstOf(g.firstErr, d.firstErr))
			}
		})
		if g.errors+d.errors > 0 || g.q(0.99)-d.q(0.99) >= 10*time.Millisecond {
			break
		}
		best = rate
	}
	b.Run("max-rate", func(b *testing.B) {
		b.ReportMetric(float64(best), "max_rate_under_10ms_p99")
	})
}

// overheadConfig is the gateway's conclave.yaml: the built-in settings, the
// engines the mode uses pointed at the simulator at simURL, and the mode.
func overheadConfig(simURL string) string {
	return fmt.Sprintf(`log: {level: warn}
engines:
  - {id: sim/swift,        family: sim-openai,    max_tier: experience, adapter: openai,    endpoint: %[1]s/openai/v1, credential: CONCLAVE_BENCH_SIM_KEY, input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.60}
  - {id: sim/atlas,        family: sim-openai,    max_tier: plus,       adapter: openai,    endpoint: %[1]s/openai/v1, credential: CONCLAVE_BENCH_SIM_KEY, input_usd_per_mtok: 2.50, output_usd_per_mtok: 10.00}
  - {id: sim/sonnet,       family: sim-anthropic, max_tier: plus,       adapter: anthropic, endpoint: %[1]s/anthropic, credential: CONCLAVE_BENCH_SIM_KEY, input_usd_per_mtok: 3.00, output_usd_per_mtok: 15.00}
  - {id: sim/gemini-flash, family: sim-google,    max_tier: plus,       adapter: gemini,    endpoint: %[1]s/gemini,    credential: CONCLAVE_BENCH_SIM_KEY, input_usd_per_mtok: 0.30, output_usd_per_mtok: 2.50}
modes:
  - key: %[2]s
    id: %[2]s
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
`, simURL, overheadMode)
}

// overheadRates is the arrival rates to try, in order, or those of
// CONCLAVE_BENCH_OVERHEAD_RATES ("500", "100,500").
func overheadRates(b *testing.B) []int {
	env := os.Getenv("CONCLAVE_BENCH_OVERHEAD_RATES")
	if env == "" {
		return []int{100, 250, 500, 750, 1000, 1500}
	}
	var rates []int
	for f := range strings.SplitSeq(env, ",") {
		r, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || r <= 0 {
			b.Fatalf("CONCLAVE_BENCH_OVERHEAD_RATES: %q is not a positive rate", f)
		}
		rates = append(rates, r)
	}
	return rates
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

func firstOf(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// sendOK sends req and reads the whole answer; anything but a 200 is an
// error.
func sendOK(client *http.Client, req *http.Request) error {
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != 200 {
		return fmt.Errorf("status %d: %.300s", res.StatusCode, body)
	}
	return nil
}

type openLoopResult struct {
	lat      []time.Duration // sorted
	n        int
	errors   int
	firstErr error
	elapsed  time.Duration
}

func (r openLoopResult) q(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	return r.lat[min(len(r.lat)-1, int(p*float64(len(r.lat))))]
}

// openLoop starts call(i) rate times a second for window, each on its own
// goroutine at its scheduled time, and returns the latencies counted from
// the schedule.
func openLoop(rate int, window time.Duration, call func(i int) error) openLoopResult {
	n := int(window.Seconds() * float64(rate))
	interval := time.Second / time.Duration(rate)
	lat := make([]time.Duration, n)
	var errs atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		at := start.Add(time.Duration(i) * interval)
		if d := time.Until(at); d > 0 {
			time.Sleep(d)
		}
		wg.Go(func() {
			if err := call(i); err != nil {
				errs.Add(1)
				firstErr.CompareAndSwap(nil, err)
			}
			lat[i] = time.Since(at)
		})
	}
	wg.Wait()
	r := openLoopResult{lat: lat, n: n, errors: int(errs.Load()), elapsed: time.Since(start)}
	if e, ok := firstErr.Load().(error); ok {
		r.firstErr = e
	}
	slices.Sort(r.lat)
	return r
}
