package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

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
// exactly 30 s; the classifier, judge and synthesis answer in the quick
// profile's 50–600 ms. The engine's default hedging starts each seat's
// backup (also a 30 s engine) beside the slow primary, so a deliberation
// holds six engine calls open. All N requests are sent at once, over
// HTTP/1.1 with a connection each (as an OpenAI client library sends
// them), and the benchmark waits for all. Each run happens once whatever
// b.N.
//
// It reports, for N = 100 (the baseline) and N = 10,000 (the goal), in the
// same run against the same gateway process:
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
//     its /metrics every second.
//   - p50_s, max_s: wall-clock latency of one call; with no queueing a call
//     takes about 31 s, so the excess is queueing (holds and settles on the
//     database pool, CPU shared with the simulator, the load generator and
//     Postgres).
//
// It fails only on wrong results: any error fails the benchmark after the
// figures are reported. It needs a Linux /proc; elsewhere it is skipped.
func BenchmarkChatInFlight(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("needs /proc: ", err)
	}
	simURL := startSim(b)
	dir := b.TempDir()
	cfgPath := filepath.Join(dir, "conclave.yaml")
	if err := os.WriteFile(cfgPath, []byte(inFlightConfig(simURL)), 0o600); err != nil {
		b.Fatal(err)
	}
	dbURL := pgtest.NewDatabase(b)
	key := inFlightKey(b, dbURL)
	gw := startServe(b, dir, []string{"DATABASE_URL=" + dbURL, "CONCLAVE_BENCH_SIM_KEY=bench"}, "--config", cfgPath)
	b.Cleanup(func() {
		if gw.cmd.ProcessState == nil {
			gw.stop(b)
		}
	})
	pid := gw.cmd.Process.Pid

	body := chatRequestBody(inFlightMode, "Should a twelve-person team split its monolith into microservices this year? "+
		"[[sim@atlas: delay=30s]] [[sim@sonnet: delay=30s]] [[sim@gemini-flash: delay=30s]]")
	var failed []string
	for _, n := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			// One run whatever b.N (a -benchtime meant for another
			// benchmark must not repeat a 30-second run): the figures are
			// per run.
			t0 := time.Now()
			r := inFlight(b, gw.base, key, body, pid, n)
			b.ReportMetric(float64(time.Since(t0).Nanoseconds()), "ns/op") // one run, not b.N
			b.ReportMetric(r.peakMiB, "peak_rss_MiB")
			b.ReportMetric(1024, "goal_rss_MiB")
			b.ReportMetric(r.idleMiB, "idle_rss_MiB")
			b.ReportMetric(float64(r.errors), "errors")
			b.ReportMetric(float64(r.peakGoroutines), "peak_goroutines")
			b.ReportMetric(r.p50.Seconds(), "p50_s")
			b.ReportMetric(r.max.Seconds(), "max_s")
			if r.errors > 0 {
				failed = append(failed, fmt.Sprintf("n=%d: %d errors, first: %s", n, r.errors, r.firstErr))
			}
		})
	}
	if len(failed) > 0 {
		b.Fatal(strings.Join(failed, "; "))
	}
}

// inFlightMode is the benchmark's only mode.
const inFlightMode = "bench-in-flight"

// inFlightConfig is the gateway's conclave.yaml: the built-in engines that
// the mode uses, pointed at the simulator at simURL, and the mode.
func inFlightConfig(simURL string) string {
	return fmt.Sprintf(`log:
  level: warn
limits:
  rpm: 1000000
  concurrency: 100000
egress:
  h2c: true
engines:
  - {id: sim/swift,          family: sim-openai,    max_tier: experience, adapter: openai,    endpoint: %[1]s/openai/v1, credential: CONCLAVE_BENCH_SIM_KEY, input_usd_per_mtok: 0.15,  output_usd_per_mtok: 0.60}
  - {id: sim/atlas,          family: sim-openai,    max_tier: plus,       adapter: openai,    endpoint: %[1]s/openai/v1, credential: CONCLAVE_BENCH_SIM_KEY, input_usd_per_mtok: 2.50,  output_usd_per_mtok: 10.00}
  - {id: sim/atlas-frontier, family: sim-openai,    max_tier: pro,        adapter: openai,    endpoint: %[1]s/openai/v1, credential: CONCLAVE_BENCH_SIM_KEY, input_usd_per_mtok: 10.00, output_usd_per_mtok: 40.00}
  - {id: sim/sonnet,         family: sim-anthropic, max_tier: plus,       adapter: anthropic, endpoint: %[1]s/anthropic, credential: CONCLAVE_BENCH_SIM_KEY, input_usd_per_mtok: 3.00,  output_usd_per_mtok: 15.00}
  - {id: sim/opus,           family: sim-anthropic, max_tier: pro,        adapter: anthropic, endpoint: %[1]s/anthropic, credential: CONCLAVE_BENCH_SIM_KEY, input_usd_per_mtok: 15.00, output_usd_per_mtok: 75.00}
  - {id: sim/gemini-flash,   family: sim-google,    max_tier: plus,       adapter: gemini,    endpoint: %[1]s/gemini,    credential: CONCLAVE_BENCH_SIM_KEY, input_usd_per_mtok: 0.30,  output_usd_per_mtok: 2.50}
modes:
  - key: bench-in-flight
    id: %[2]s
    ticker: CNCL:BINF
    name: Bench in flight
    description: One round of three slow seats, for the in-flight benchmark.
    use_when: Never; it exists for the benchmark.
    price_tier: standard
    includes_deliberation: true
    seats:
      plus:
        - {engine: sim/atlas, backup: sim/gemini-flash}
        - {engine: sim/sonnet, backup: sim/atlas}
        - {engine: sim/gemini-flash, backup: sim/sonnet}
    staff:
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
`, simURL, inFlightMode)
}

var simURLRe = regexp.MustCompile(`"msg":"simulated provider listening".*"url":"(http://[^"]+)"`)

// startSim runs `conclave sim` on a free port and returns its base URL. It
// accepts any non-empty key.
func startSim(b *testing.B) string {
	b.Helper()
	cmd := exec.Command(binary(b), "sim", "--addr", "127.0.0.1:0")
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
}

// inFlight sends n chat completions at once to the gateway at base (process
// pid), a connection each, and waits for them all.
func inFlight(b *testing.B, base, key, body string, pid, n int) inFlightResult {
	b.Helper()
	client := &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: n,
		MaxIdleConns:        n,
		IdleConnTimeout:     time.Minute,
		DialContext:         (&net.Dialer{Timeout: 60 * time.Second}).DialContext,
	}}
	defer client.CloseIdleConnections()
	run := time.Now().UnixNano() // calls are distinct: each has its own key
	call := func(i int) error {
		req, err := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", fmt.Sprintf("bench-%d-%d-%d", run, n, i))
		res, err := client.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		if err != nil {
			return err
		}
		if res.StatusCode != 200 {
			return fmt.Errorf("status %d: %s", res.StatusCode, raw)
		}
		var out struct {
			Panel struct {
				Lane string `json:"lane"`
			} `json:"panel"`
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			return fmt.Errorf("decoding %s: %w", raw, err)
		}
		if out.Panel.Lane != "panel" {
			return fmt.Errorf("lane %q, want panel", out.Panel.Lane)
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
				if g := goroutines(metrics, base); g > r.peakGoroutines {
					r.peakGoroutines = g
				}
			}
		}
	}()
	close(start)
	wg.Wait()
	close(done)
	<-sampled
	slices.Sort(lat)
	r.peakMiB = float64(procStatusKiB(b, pid, "VmHWM")) / 1024
	r.errors, r.p50, r.max = int(errs.Load()), lat[n/2], lat[n-1]
	if s, ok := firstErr.Load().(string); ok {
		r.firstErr = s
	}
	return r
}

// goroutines reads go_goroutines from the gateway's /metrics; 0 when it
// cannot.
func goroutines(client *http.Client, base string) int {
	res, err := client.Get(base + "/metrics")
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			g, _ := strconv.ParseFloat(v, 64)
			_, _ = io.Copy(io.Discard, res.Body)
			return int(g)
		}
	}
	return 0
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
