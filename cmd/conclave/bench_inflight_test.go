package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/benchtest"
	"github.com/conclavehq/conclave/internal/loadtest"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

// inFlightMemoryLimitMiB is the soft memory limit of the second gateway:
// under the 1 GiB goal with room for what the runtime does not count
// (its own structures, fragmentation).
const inFlightMemoryLimitMiB = 900

// BenchmarkChatInFlight holds many deliberations in flight at once on one
// gateway process and measures that process alone. Three processes take
// part: `conclave sim` (the simulated provider), `conclave serve` (the
// gateway, the one measured) and this benchmark (the load generator), with
// Postgres a fourth. The gateway's conclave.yaml points its engines at the
// external simulator, reached over unencrypted HTTP/2 (egress.h2c), and
// has one mode, bench-in-flight: one round, no critique, no express lane,
// seats atlas, sonnet and gemini-flash (each backing up another), judge
// opus, synthesis atlas-frontier, classifier swift. The question carries
// targeted simulator directives that make every call to a seat engine take
// exactly 30 s (longer for more than 10,000 calls: inFlightSize.seat); the
// classifier, judge and synthesis answer in the quick
// profile's 50–600 ms. The mode hedges (quorum 2, straggler deadline
// 20 s: a 10 s hedge delay), but an engine is hedged only past its recent
// median latency (the default hedge percentile), within a per-engine hedge
// budget. The first run
// (N = 100) meets cold engines, so its primaries are hedged at 10 s as far
// as the budget allows (16 per engine); it also warms the gateway: every
// seat engine has 100 answers of about 30 s on record, so in the next run
// a primary is hedged only if it outlasts them, and a deliberation holds
// three engine calls open. All N requests are sent at once, over HTTP/1.1
// with a connection each (as an OpenAI client library sends them) or over
// HTTP/2 (inFlightSize), and the benchmark waits for all. Each run happens
// once whatever b.N.
//
// It runs two gateways one after the other: limit=none with the Go
// runtime's default memory management, and limit=900MiB with
// server.memory_limit_mib set to 900 (a soft limit: the runtime collects
// garbage more often near it, trading CPU for a lower peak). It reports,
// for N = 100 (the baseline, cold), N = 10,000 (after the N = 100 run has
// warmed the same gateway process) and, on the gateway without a limit,
// N = 20,000 (the goal: in at most 1 GiB):
//
//   - peak_rss_MiB: the gateway's VmHWM, reset just before the requests go
//     out (Linux's clear_refs), read after all have completed. Only the
//     gateway is counted: the simulator, the load generator and Postgres
//     are other processes.
//   - idle_rss_MiB: the gateway's VmRSS just before the requests go out
//     (warm after the previous run, if any).
//   - goal_rss_MiB: the goal, 1 GiB, beside the peak.
//   - errors: responses other than a 200 panel answer, and transport errors
//     (goal: none).
//   - peak_goroutines: the most goroutines in the gateway, sampled from
//     its /metrics (on its operator listener) every second.
//   - peak_in_flight: the most billed calls the gateway ran at once
//     (conclave_calls_in_flight, sampled with the goroutines): N when
//     every call was admitted before the first answered.
//   - p50_s, max_s: wall-clock latency of one call; with no queueing a call
//     takes about 31 s, so the excess is queueing (holds and settles on the
//     database pool, CPU shared with the simulator, the load generator and
//     Postgres).
//   - hedged_seats: seats whose backup was started beside the primary.
//   - stack_MiB, heap_inuse_MiB: the gateway's goroutine stacks and heap
//     in use when its goroutines peaked (from /metrics).
//   - stack_used_MiB, heap_live_MiB: of those, what the goroutines' stacks
//     used at the last collection (a stack is allocated in powers of two,
//     so stack_MiB is up to twice it) and the heap the last collection
//     found live (the rest of the heap in use is garbage not yet
//     collected, or free space in its spans). The collector lets the heap
//     grow to about twice the live heap plus the stacks used before it
//     collects again.
//
// CONCLAVE_BENCH_IN_FLIGHT_N replaces the sizes (say "100,2000,2000h2c", a
// quicker probe whose first run still warms the gateway). CONCLAVE_BENCH_GATEWAY_ENV
// adds variables to the gateway's environment alone (say "GOGC=50").
// CONCLAVE_BENCH_PPROF_DIR runs the gateway as this test binary with
// net/http/pprof on a side port and saves its heap and goroutine profiles
// at the goroutine peak there. CONCLAVE_BENCH_IN_FLIGHT_TRACE=1 logs the
// gateway's resident memory, goroutines, calls in flight, stacks and heap
// every second, to show when in a run the peak falls.
//
// It fails only on wrong results: any error fails the benchmark after the
// figures are reported. It needs a Linux /proc and fails without one.
func BenchmarkChatInFlight(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Fatal("the in-flight benchmark reads the gateway's memory from /proc: ", err)
	}
	simURL := startSim(b)
	dbURL := pgtest.NewDatabase(b)
	key := inFlightKey(b, dbURL)
	// The gateway without a limit holds 100 and 10,000 calls sent over
	// HTTP/1.1, then 10,000 and 20,000 (the goal) over HTTP/2; the one with
	// the soft limit 100 and 10,000 over HTTP/1.1. The smoke form (make
	// test, benchtest.Smoking): one gateway, five deliberations of 1-second
	// seats over each.
	seat, limits := inFlightSeat, []int{0, inFlightMemoryLimitMiB}
	sizes := map[int][]inFlightSize{
		0:                      {{n: 100}, {n: 10_000}, {n: 10_000, h2c: true}, {n: 20_000, h2c: true}},
		inFlightMemoryLimitMiB: {{n: 100}, {n: 10_000}},
	}
	if benchtest.Smoking() {
		seat, sizes, limits = time.Second, map[int][]inFlightSize{0: {{n: 5}, {n: 5, h2c: true}}}, []int{0}
	}
	most := 0
	for _, limit := range limits {
		sizes[limit] = envSizes(b, "CONCLAVE_BENCH_IN_FLIGHT_N", sizes[limit])
		for _, size := range sizes[limit] {
			if !size.h2c {
				most = max(most, size.n)
			}
		}
	}
	// Each call over HTTP/1.1 holds a connection here and one in the
	// gateway, which inherits this process's limit.
	ensureOpenFiles(b, uint64(most)+inFlightSpareFiles)
	var failed []string
	// Two gateways, one after the other: the runtime's default memory
	// management, then a soft memory limit (server.memory_limit_mib) set
	// under the goal.
	for _, limit := range limits {
		name := "limit=none"
		if limit > 0 {
			name = fmt.Sprintf("limit=%dMiB", limit)
		}
		dir := b.TempDir()
		cfgPath := filepath.Join(dir, "conclave.yaml")
		if err := os.WriteFile(cfgPath, []byte(inFlightConfig(simURL, limit)), 0o600); err != nil {
			b.Fatal(err)
		}
		env := []string{"DATABASE_URL=" + dbURL, "CONCLAVE_BENCH_SIM_KEY=bench"}
		env = append(env, strings.Fields(os.Getenv("CONCLAVE_BENCH_GATEWAY_ENV"))...)
		// The gateway logs at warn (10,000 request lines would cost it
		// CPU), so its serving line, which names the operator listener's
		// bound port, is not written: the listener gets a port chosen here.
		opAddr := freeLoopbackAddr(b)
		args := []string{"--config", cfgPath, "--operator-addr", opAddr}
		var gw *process
		if pprofDir := os.Getenv("CONCLAVE_BENCH_PPROF_DIR"); pprofDir != "" {
			gw = startProfiledGateway(b, dir, pprofDir, env, args...)
		} else {
			gw = startServe(b, dir, env, args...)
		}
		pid := gw.cmd.Process.Pid
		metricsBase := "http://" + opAddr
		// The sizes in turn: the first run warms the gateway for the next.
		for _, size := range sizes[limit] {
			b.Run(name+"/"+size.String(), func(b *testing.B) {
				// One run whatever b.N (a -benchtime meant for another
				// benchmark must not repeat a 30-second run): the figures
				// are per run.
				t0 := time.Now()
				r := inFlight(b, gw.base, metricsBase, key, inFlightBody(size.seat(seat)), pid, size)
				b.ReportMetric(float64(time.Since(t0).Nanoseconds()), "ns/op") // one run, not b.N
				b.ReportMetric(r.peakMiB, "peak_rss_MiB")
				b.ReportMetric(1024, "goal_rss_MiB")
				b.ReportMetric(r.idleMiB, "idle_rss_MiB")
				b.ReportMetric(float64(r.errors), "errors")
				b.ReportMetric(float64(r.peakGoroutines), "peak_goroutines")
				b.ReportMetric(float64(r.peakInFlight), "peak_in_flight")
				b.ReportMetric(r.p50.Seconds(), "p50_s")
				b.ReportMetric(r.max.Seconds(), "max_s")
				b.ReportMetric(float64(r.hedged), "hedged_seats")
				b.ReportMetric(r.stackMiB, "stack_MiB")
				b.ReportMetric(r.heapMiB, "heap_inuse_MiB")
				b.ReportMetric(r.stackUsedMiB, "stack_used_MiB")
				b.ReportMetric(r.heapLiveMiB, "heap_live_MiB")
				if dir := os.Getenv("CONCLAVE_BENCH_PPROF_DIR"); dir != "" {
					b.Logf("profiles at the peak: %s", filepath.Join(dir, "*-"+size.file()+".pb.gz"))
				}
				if r.errors > 0 {
					failed = append(failed, fmt.Sprintf("%s %s: %d errors, first: %s", name, size, r.errors, r.firstErr))
					logGatewayErrors(b, gw)
				}
			})
		}
		gw.stop(b)
	}
	if len(failed) > 0 {
		b.Fatal(strings.Join(failed, "; "))
	}
}

// inFlightSeat is how long every seat call takes, unless a size needs
// longer (inFlightSize.seat).
const inFlightSeat = 30 * time.Second

// inFlightBody is the benchmark's question, whose seats each take seat.
func inFlightBody(seat time.Duration) string {
	return chatRequestBody(inFlightMode, "Should a twelve-person team split its monolith into microservices this year? "+
		strings.ReplaceAll("[[sim@atlas: delay=D]] [[sim@sonnet: delay=D]] [[sim@gemini-flash: delay=D]]", "D", seat.String()))
}

// seat is how long the run's seat calls take: def, or for more than
// 10,000 calls 4.5 ms a call when that is longer, so that every call is
// admitted before the first seats answer (admission takes about 3.5 ms a
// call on the development machine) and all N are in flight at the peak;
// peak_in_flight says whether they were.
func (s inFlightSize) seat(def time.Duration) time.Duration {
	if s.n <= 10_000 {
		return def
	}
	return max(def, time.Duration(s.n)*4500*time.Microsecond)
}

// inFlightSize is one run of the in-flight benchmark: n calls at once,
// over HTTP/1.1 with a connection each, or over HTTP/2 with prior
// knowledge (the gateway's server.h2c), sharing connections of up to 250
// calls each, as a proxy in front that multiplexes sends them.
type inFlightSize struct {
	n   int
	h2c bool
}

// String names the run in the benchmark's name: "n=10000", "n=20000/h2c".
func (s inFlightSize) String() string {
	if s.h2c {
		return fmt.Sprintf("n=%d/h2c", s.n)
	}
	return fmt.Sprintf("n=%d", s.n)
}

// file names the run in its profiles' file names.
func (s inFlightSize) file() string {
	return strings.ReplaceAll(strings.TrimPrefix(s.String(), "n="), "/", "-")
}

// envSizes is the sizes in the environment variable name, comma-separated
// positive whole numbers, each over HTTP/1.1 or, with the suffix "h2c",
// over HTTP/2 ("100,2000,2000h2c"); def when it is unset.
func envSizes(b *testing.B, name string, def []inFlightSize) []inFlightSize {
	return envList(b, name, "a positive whole number, with or without the suffix h2c", def, func(f string) (inFlightSize, bool) {
		digits, h2c := strings.CutSuffix(f, "h2c")
		n, ok := positive(digits)
		return inFlightSize{n: n, h2c: h2c}, ok
	})
}

// inFlightDials bounds the connections the benchmark's HTTP/2 client
// dials at a time.
const inFlightDials = 16

// inFlightSpareFiles is what a process of the in-flight benchmark opens
// beside its N connections: the gateway's connections to the simulator
// and PostgreSQL, listeners, files.
const inFlightSpareFiles = 4096

// ensureOpenFiles lets this process, and the gateway and simulator it
// starts (which inherit the limit), hold need open files: it raises the
// soft limit, and the hard one where this process may (as root). When it
// cannot, the benchmark fails saying so, rather than failing calls
// mid-run with "too many open files".
func ensureOpenFiles(b *testing.B, need uint64) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Fatal(err)
	}
	if lim.Cur >= need {
		return
	}
	want := syscall.Rlimit{Cur: need, Max: max(lim.Max, need)}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
		b.Fatalf("the in-flight benchmark needs %d open files in this process and in the gateway; the limit is %d (hard %d) and raising it failed: %v. Raise it (ulimit -n) or run fewer calls (CONCLAVE_BENCH_IN_FLIGHT_N)",
			need, lim.Cur, lim.Max, err)
	}
}

// envCounts is the comma-separated positive whole numbers in the
// environment variable name ("100,2000"), or def when it is unset.
func envCounts(b *testing.B, name string, def []int) []int {
	return envList(b, name, "a positive whole number", def, positive)
}

// envList is the comma-separated items of the environment variable name,
// each read by parse, or def when it is unset; an item parse refuses fails
// the benchmark, saying it is not what want describes.
func envList[T any](b *testing.B, name, want string, def []T, parse func(string) (T, bool)) []T {
	env := os.Getenv(name)
	if env == "" {
		return def
	}
	var items []T
	for f := range strings.SplitSeq(env, ",") {
		item, ok := parse(strings.TrimSpace(f))
		if !ok {
			b.Fatalf("%s: %q is not %s", name, f, want)
		}
		items = append(items, item)
	}
	return items
}

// positive reads a positive whole number.
func positive(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil && n > 0
}

// logGatewayErrors logs the first of the gateway's error lines (the cause
// of every 5xx is logged at error level), to say where errors came from.
func logGatewayErrors(b *testing.B, gw *process) {
	shown := 0
	for line := range strings.Lines(gw.stderr.String()) {
		if strings.Contains(line, `"level":"ERROR"`) {
			b.Log("gateway: ", strings.TrimSpace(line))
			if shown++; shown == 20 {
				return
			}
		}
	}
}

// inFlightMode is the benchmark's only mode.
const inFlightMode = "bench-in-flight"

// inFlightConfig is the gateway's conclave.yaml: the built-in engines that
// the mode uses, pointed at the simulator at simURL, and the mode.
func inFlightConfig(simURL string, memoryLimitMiB int) string {
	return fmt.Sprintf(`log:
  level: warn
server:
  memory_limit_mib: %[3]d
  h2c: true
limits:
  rpm: 1000000
  concurrency: 100000
egress:
  h2c: true
%[4]smodes:
  - key: bench-in-flight
    id: %[2]s
    ticker: CNCL:BINF
    name: Bench in flight
    description: One round of three slow seats, for the in-flight benchmark.
    use_when: Never; it exists for the benchmark.
%[5]s    staff:
      classifier: {engine: sim/swift}
      judge: {engine: sim/opus}
      synthesis: {engine: sim/atlas-frontier}
    critique: never
    max_rounds: 1
    quorum: 2
    straggler_deadline: 20s
    express_threshold: 0
    cost_ceiling_usd: 1.50
    pricing:
      surcharge_usd: 0.15
`, simURL, inFlightMode, memoryLimitMiB,
		simEngines(simURL, "sim/swift", "sim/atlas", "sim/atlas-frontier", "sim/sonnet", "sim/opus", "sim/gemini-flash"), benchSeats)
}

// benchSeats is the seats of both benchmark modes, three plus-tier seats
// on the simulated engines, with the lines before them of a mode's YAML.
const benchSeats = `    price_tier: standard
    includes_deliberation: true
    seats:
      plus:
        - {engine: sim/atlas, backup: sim/gemini-flash}
        - {engine: sim/sonnet, backup: sim/atlas}
        - {engine: sim/gemini-flash, backup: sim/sonnet}
`

// simEngineSpecs is the built-in simulated engines' settings, pointed at
// an external simulator (%s: its base URL) with the key in
// CONCLAVE_BENCH_SIM_KEY.
var simEngineSpecs = map[string]string{
	"sim/swift":          "family: sim-openai,    max_tier: experience, adapter: openai,    endpoint: %s/openai/v1, credential: CONCLAVE_BENCH_SIM_KEY, input_usd_per_mtok: 0.15,  output_usd_per_mtok: 0.60",
	"sim/atlas":          "family: sim-openai,    max_tier: plus,       adapter: openai,    endpoint: %s/openai/v1, credential: CONCLAVE_BENCH_SIM_KEY, input_usd_per_mtok: 2.50,  output_usd_per_mtok: 10.00",
	"sim/atlas-frontier": "family: sim-openai,    max_tier: pro,        adapter: openai,    endpoint: %s/openai/v1, credential: CONCLAVE_BENCH_SIM_KEY, input_usd_per_mtok: 10.00, output_usd_per_mtok: 40.00",
	"sim/sonnet":         "family: sim-anthropic, max_tier: plus,       adapter: anthropic, endpoint: %s/anthropic, credential: CONCLAVE_BENCH_SIM_KEY, input_usd_per_mtok: 3.00,  output_usd_per_mtok: 15.00",
	"sim/opus":           "family: sim-anthropic, max_tier: pro,        adapter: anthropic, endpoint: %s/anthropic, credential: CONCLAVE_BENCH_SIM_KEY, input_usd_per_mtok: 15.00, output_usd_per_mtok: 75.00",
	"sim/gemini-flash":   "family: sim-google,    max_tier: plus,       adapter: gemini,    endpoint: %s/gemini,    credential: CONCLAVE_BENCH_SIM_KEY, input_usd_per_mtok: 0.30,  output_usd_per_mtok: 2.50",
}

// simEngines is the engines section of a conclave.yaml naming the engines
// ids of simEngineSpecs, reached at the simulator at simURL, and an empty
// judges section: the benchmarks run no test runs, and the built-in judges'
// engines are not among these.
func simEngines(simURL string, ids ...string) string {
	var sb strings.Builder
	sb.WriteString("engines:\n")
	for _, id := range ids {
		fmt.Fprintf(&sb, "  - {id: %s, %s}\n", id, fmt.Sprintf(simEngineSpecs[id], simURL))
	}
	sb.WriteString("judges: []\n")
	return sb.String()
}

var simURLRe = regexp.MustCompile(`"msg":"simulated provider listening".*"url":"(http://[^"]+)"`)

// startSim runs `conclave sim` on a free port, with any further flags, and
// returns its base URL. It accepts any non-empty key.
func startSim(b *testing.B, flags ...string) string {
	b.Helper()
	cmd := exec.Command(binary(b), append([]string{"sim", "--addr", "127.0.0.1:0"}, flags...)...)
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	url := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			if m := simURLRe.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case url <- m[1]:
				default:
				}
			}
		}
		close(url)
	}()
	select {
	case u, ok := <-url:
		if !ok {
			b.Fatal("conclave sim exited before listening")
		}
		return u
	case <-time.After(60 * time.Second):
		b.Fatal("conclave sim did not start")
	}
	return ""
}

// inFlightKey creates an organisation with funds for every call's hold (a
// call holds its 2 USD ceiling until it settles) and returns a key for it
// whose rate and concurrency limits the benchmark cannot reach.
func inFlightKey(b *testing.B, dbURL string) string {
	b.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	store := pgstore.New(pool)
	org, _, err := store.CreateOrg(ctx, &core.CreateOrgParams{Name: "Bench Org"})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := store.AddFunds(ctx, &core.AddFundsParams{OrgID: org.ID, Amount: 100_000 * core.MicrosPerUSD, Memo: "bench"}); err != nil {
		b.Fatal(err)
	}
	secret, hash := core.NewKeySecret(false)
	if _, err := store.CreateKey(ctx, &core.CreateKeyParams{
		OrgID: org.ID, Hash: hash, Hint: core.KeyHint(secret), Name: "bench", RPM: 1_000_000, Concurrency: 100_000,
	}); err != nil {
		b.Fatal(err)
	}
	return secret
}

func chatRequestBody(model, question string) string {
	q, _ := json.Marshal(question)
	return `{"model":"` + model + `","messages":[{"role":"user","content":` + string(q) + `}]}`
}

type inFlightResult struct {
	peakMiB, idleMiB float64
	errors           int
	firstErr         string
	p50, max         time.Duration
	peakGoroutines   int
	peakInFlight     int // the most billed calls the gateway ran at once (conclave_calls_in_flight)
	// stackMiB and heapMiB are the gateway's stacks and heap in use when
	// its goroutines peaked; stackUsedMiB and heapLiveMiB what its last
	// collection then had found used of the stacks and live in the heap.
	stackMiB, heapMiB, stackUsedMiB, heapLiveMiB float64
	hedged                                       int // seats whose backup was started beside the primary
}

// inFlight sends n chat completions at once to the gateway at base (process
// pid, metrics at metricsBase: its operator listener), a connection each,
// and waits for them all.
func inFlight(b *testing.B, base, metricsBase, key, body string, pid int, size inFlightSize) inFlightResult {
	b.Helper()
	n := size.n
	transport := &http.Transport{
		MaxIdleConnsPerHost: n,
		MaxIdleConns:        n,
		IdleConnTimeout:     time.Minute,
		DialContext:         (&net.Dialer{Timeout: 60 * time.Second}).DialContext,
	}
	if size.h2c {
		// HTTP/2 only, with prior knowledge: the transport opens another
		// connection whenever those it has carry the server's 250 streams.
		// Sent all at once, the calls found no connection with room and
		// dialled one each, past this process's open files, in some runs;
		// so it dials a few at a time (for HTTP/2 the bound is on the
		// connections being dialled, and the calls waiting take a stream
		// on each as it opens).
		transport.Protocols = new(http.Protocols)
		transport.Protocols.SetUnencryptedHTTP2(true)
		transport.MaxConnsPerHost = inFlightDials
	}
	client := &http.Client{Transport: transport}
	defer client.CloseIdleConnections()
	run := time.Now().UnixNano() // calls are distinct: each has its own key
	var hedged atomic.Int64
	call := func(i int) error {
		req, err := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", fmt.Sprintf("bench-%d-%d-%d", run, n, i))
		raw, err := loadtest.Send(client, req)
		if err != nil {
			return err
		}
		var out struct {
			Panel struct {
				Lane         string `json:"lane"`
				Deliberation []struct {
					Seats []struct {
						Hedged bool `json:"hedged"`
					} `json:"seats"`
				} `json:"deliberation"`
			} `json:"panel"`
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			return fmt.Errorf("decoding %s: %w", raw, err)
		}
		if out.Panel.Lane != "panel" {
			return fmt.Errorf("lane %q, want panel", out.Panel.Lane)
		}
		for _, rd := range out.Panel.Deliberation {
			for _, s := range rd.Seats {
				if s.Hedged {
					hedged.Add(1)
				}
			}
		}
		return nil
	}

	r := inFlightResult{idleMiB: float64(procStatusKiB(b, pid, "VmRSS")) / 1024}
	resetPeakRSS(b, pid)
	var (
		wg       sync.WaitGroup
		errs     atomic.Int64
		firstErr atomic.Value
		lat      = make([]time.Duration, n)
		start    = make(chan struct{})
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			t0 := time.Now()
			err := call(i)
			lat[i] = time.Since(t0)
			if err != nil {
				errs.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
			}
		}()
	}
	// Sample the gateway's goroutines until all calls end.
	done := make(chan struct{})
	sampled := make(chan struct{})
	trace := os.Getenv("CONCLAVE_BENCH_IN_FLIGHT_TRACE") == "1"
	t0 := time.Now()
	go func() {
		defer close(sampled)
		metrics := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}, Timeout: 10 * time.Second}
		defer metrics.CloseIdleConnections()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				m := runtimeMetrics(metrics, metricsBase)
				if trace {
					b.Logf("%3.0f s: resident %d MiB, %d goroutines, %d calls in flight, stacks %.0f MiB (%.0f used), heap %.0f MiB in use (%.0f live, next collection at %.0f)",
						time.Since(t0).Seconds(), procStatusKiB(b, pid, "VmRSS")/1024, m.goroutines, m.inFlight,
						m.stackMiB, m.stackUsedMiB, m.heapMiB, m.heapLiveMiB, m.nextGCMiB)
				}
				r.peakInFlight = max(r.peakInFlight, m.inFlight)
				if m.goroutines > r.peakGoroutines {
					r.peakGoroutines = m.goroutines
					r.stackMiB, r.heapMiB = m.stackMiB, m.heapMiB
					r.stackUsedMiB, r.heapLiveMiB = m.stackUsedMiB, m.heapLiveMiB
					if m.goroutines > n { // at least a goroutine a deliberation: the burst is in
						saveProfiles(size.file())
					}
				}
			}
		}
	}()
	t0 = time.Now()
	close(start)
	wg.Wait()
	close(done)
	<-sampled
	slices.Sort(lat)
	r.peakMiB = float64(procStatusKiB(b, pid, "VmHWM")) / 1024
	r.errors, r.p50, r.max = int(errs.Load()), lat[n/2], lat[n-1]
	r.hedged = int(hedged.Load())
	if s, ok := firstErr.Load().(string); ok {
		r.firstErr = s
	}
	return r
}

// runtimeSample is what the gateway's /metrics said of its runtime and
// of its billed calls in flight.
type runtimeSample struct {
	goroutines, inFlight                         int
	stackMiB, heapMiB, stackUsedMiB, heapLiveMiB float64
	nextGCMiB                                    float64 // the heap's size at which the next collection starts
}

// runtimeMetrics reads the goroutine count and the stacks and heap from
// the gateway's /metrics (on its operator listener, at base); zeros
// when it cannot.
func runtimeMetrics(client *http.Client, base string) runtimeSample {
	var m runtimeSample
	res, err := client.Get(base + "/metrics")
	if err != nil {
		return m
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		f, _ := strconv.ParseFloat(v, 64)
		switch name {
		case "go_goroutines":
			m.goroutines = int(f)
		case "conclave_calls_in_flight":
			m.inFlight = int(f)
		case "go_memstats_stack_inuse_bytes":
			m.stackMiB = f / (1 << 20)
		case "go_memstats_heap_inuse_bytes":
			m.heapMiB = f / (1 << 20)
		case "go_gc_scan_stack_bytes":
			m.stackUsedMiB = f / (1 << 20)
		case "go_gc_heap_live_bytes":
			m.heapLiveMiB = f / (1 << 20)
		case "go_memstats_next_gc_bytes":
			m.nextGCMiB = f / (1 << 20)
		}
	}
	return m
}

// resetPeakRSS resets the process's VmHWM to its current RSS (Linux 4.0+).
func resetPeakRSS(b *testing.B, pid int) {
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		b.Logf("cannot reset the peak RSS, it counts from the process start: %v", err)
	}
}

// procStatusKiB reads one "kB" field of the process's /proc status.
func procStatusKiB(b *testing.B, pid int, field string) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(raw)) {
		name, rest, ok := strings.Cut(line, ":")
		if ok && name == field {
			v, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return v
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// startProfiledGateway is startServe with this test binary as the gateway
// (profiledGateway, through TestMain), serving net/http/pprof on a side port whose
// address it writes to pprofDir/addr. The benchmark then saves heap and
// goroutine profiles of the gateway at its goroutine peak into pprofDir.
// Only for looking into where the memory goes: set CONCLAVE_BENCH_PPROF_DIR.
func startProfiledGateway(b *testing.B, dir, pprofDir string, env []string, args ...string) *process {
	b.Helper()
	if err := os.MkdirAll(pprofDir, 0o755); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append(env,
		"CONCLAVE_BENCH_GATEWAY_ARGS="+strings.Join(append(slices.Clone(serveArgs), args...), "\n"))...)
	p := startProcess(b, cmd)
	profiling.Store(pprofDir)
	return p
}

// profiling is the directory the gateway's profiles go to; "" for none.
var profiling atomic.Value

// saveProfiles saves the gateway's heap and goroutine profiles, named for
// the run (inFlightSize.file), when the gateway is profiled.
func saveProfiles(run string) {
	dir, _ := profiling.Load().(string)
	if dir == "" {
		return
	}
	raw, err := os.ReadFile(filepath.Join(dir, "addr"))
	if err != nil {
		return
	}
	for _, kind := range []string{"heap", "goroutine"} {
		res, err := http.Get("http://" + string(raw) + "/debug/pprof/" + kind)
		if err != nil {
			continue
		}
		f, err := os.Create(filepath.Join(dir, kind+"-"+run+".pb.gz"))
		if err == nil {
			_, _ = io.Copy(f, res.Body)
			_ = f.Close()
		}
		_ = res.Body.Close()
	}
}

// profiledGateway runs this test binary as the gateway of a profiled
// BenchmarkChatInFlight (see startProfiledGateway), with pprof on a side
// port; TestMain calls it instead of the tests when
// CONCLAVE_BENCH_GATEWAY_ARGS is set.
func profiledGateway(args, dir string) error {
	if dir == "" {
		return errors.New("a profiled gateway needs CONCLAVE_BENCH_PPROF_DIR")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "addr"), []byte(ln.Addr().String()), 0o600); err != nil {
		return err
	}
	// net/http/pprof's handlers, and the stacks in use after n collections
	// (a collection shrinks the stacks of goroutines that use a quarter of
	// theirs or less, by half).
	http.HandleFunc("/debug/stacks", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("gc"))
		var ms runtime.MemStats
		for i := 0; ; i++ {
			runtime.ReadMemStats(&ms)
			fmt.Fprintf(w, "after %d collections: stacks %.1f MiB, heap in use %.1f MiB, goroutines %d\n", i, float64(ms.StackInuse)/(1<<20), float64(ms.HeapInuse)/(1<<20), runtime.NumGoroutine())
			if i == n {
				return
			}
			runtime.GC()
		}
	})
	go func() { _ = http.Serve(ln, nil) }()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	return run(ctx, strings.Split(args, "\n"), os.Stdout, os.Stderr)
}

// freeLoopbackAddr is a loopback address with a port free a moment ago.
func freeLoopbackAddr(b *testing.B) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		b.Fatal(err)
	}
	return addr
}
