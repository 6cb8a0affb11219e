package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/conclavehq/conclave/adapters/sim"
	"github.com/conclavehq/conclave/api"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/deliberate"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/egress"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
	"github.com/conclavehq/conclave/internal/policy"
	"github.com/conclavehq/conclave/internal/providers"
	"github.com/conclavehq/conclave/internal/tokens"
	"github.com/conclavehq/conclave/plugins/protocol/direct"
)

// Modes the chat benchmarks add to the built-in catalog, each a copy of
// conclave-standard (seats atlas, sonnet and gemini-flash on tier plus).
const (
	// benchTwoRoundsMode always critiques, for two rounds, and has no
	// express lane.
	benchTwoRoundsMode = "bench-two-rounds"
	// benchInFlightMode runs one round with no express lane, and its judge
	// (opus) and synthesis (atlas-frontier) are engines that sit in no seat,
	// so slowing the seats' engines leaves them fast.
	benchInFlightMode = "bench-in-flight"
)

// chatBench is a server that deliberates for real, like setupChat's: the
// engine, the simulated provider through the real adapters and egress,
// Postgres. Its simulator and egress HTTP client are the caller's.
type chatBench struct {
	srv   *httptest.Server
	store *pgstore.Store
	org   *core.Org
	key   string
	prov  *providers.Providers
}

func setupChatBench(b *testing.B, simCfg sim.Config, egressClient *http.Client) *chatBench {
	b.Helper()
	ctx := context.Background()
	cfg, err := config.Builtin()
	if err != nil {
		b.Fatal(err)
	}
	two := cfg.Modes[0]
	two.Key, two.ID, two.Ticker, two.Name = benchTwoRoundsMode, benchTwoRoundsMode, "CNCL:BTWO", "Bench two rounds"
	two.Critique, two.MaxRounds, two.ExpressThreshold = core.CritiqueAlways, 2, 0
	one := cfg.Modes[0]
	one.Key, one.ID, one.Ticker, one.Name = benchInFlightMode, benchInFlightMode, "CNCL:BINF", "Bench in flight"
	one.Critique, one.MaxRounds, one.ExpressThreshold = core.CritiqueNever, 1, 0
	one.Staff = map[string]core.Staff{
		"classifier": {Engine: "sim/swift"},
		"judge":      {Engine: "sim/opus"},
		"synthesis":  {Engine: "sim/atlas-frontier"},
	}
	cfg.Modes = append(cfg.Modes, two, one)
	catalog, err := cfg.Catalog()
	if err != nil {
		b.Fatal(err)
	}
	prov, err := providers.Start(ctx, providers.Config{Catalog: catalog, Simulator: simCfg, Egress: egress.Config{HTTPClient: egressClient}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { prov.Stop(context.Background()) })
	engine, err := deliberate.New(deliberate.Config{Catalog: catalog, Caller: prov, Judge: direct.New()})
	if err != nil {
		b.Fatal(err)
	}
	authz, err := policy.New(ctx, policy.Config{})
	if err != nil {
		b.Fatal(err)
	}
	store := pgstore.New(pgtest.NewPool(b))
	h, err := api.New(api.Config{}, api.Deps{
		Store: store, Authz: authz, Catalog: catalog, Ready: store.Ready,
		Deliberator: engine, CountTokens: tokens.Count, Registry: prometheus.NewRegistry(),
	})
	if err != nil {
		b.Fatal(err)
	}
	// The server also accepts unencrypted HTTP/2 (prior knowledge), so a
	// load test can multiplex calls when it cannot hold a connection each.
	srv := httptest.NewUnstartedServer(h)
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	srv.Config.Protocols = protocols
	srv.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 20_000}
	srv.Start()
	b.Cleanup(srv.Close)
	org, _, err := store.CreateOrg(ctx, &core.CreateOrgParams{Name: "Bench Org"})
	if err != nil {
		b.Fatal(err)
	}
	cb := &chatBench{srv: srv, store: store, org: org, prov: prov}
	cb.key = (&testBundle{store: store, org: org}).newKey(b, &core.CreateKeyParams{})
	return cb
}

// chat sends one chat completion and returns the status and the decoded
// panel block (nil when there is none).
func (cb *chatBench) chat(ctx context.Context, client *http.Client, body string) (int, map[string]any, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", cb.srv.URL+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+cb.key)
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return res.StatusCode, nil, err
	}
	var out struct {
		Panel map[string]any `json:"panel"`
	}
	if res.StatusCode == 200 {
		if err := json.Unmarshal(raw, &out); err != nil {
			return res.StatusCode, nil, fmt.Errorf("decoding %s: %w", raw, err)
		}
	} else {
		return res.StatusCode, nil, fmt.Errorf("status %d: %s", res.StatusCode, raw)
	}
	return res.StatusCode, out.Panel, nil
}

// cpuTime is this process's CPU time so far, user plus system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkChatCPU measures the CPU time (user + system, getrusage of this
// process) per chat completion with the simulated engines at near-zero
// latency (TimeScale 1e-6), sent sequentially over loopback HTTP:
//
//   - deliberation: a full panel — classifier, three seats, judge, a second
//     (critique) round of three seats, judge, synthesis — on a mode that
//     always critiques for two rounds; gemini-flash always dissents, so
//     round one never converges. The benchmark fails unless every call is
//     a 200 that ran exactly two rounds.
//   - express: "What is 2 + 2?" on conclave-standard, which the classifier
//     sends down the express lane (classifier and one seat), the comparison.
//
// The figure is everything this process spends: the HTTP client, the API
// (admission, policy, hold and settle through pgx, receipt), the engine,
// the adapters and egress, and the in-process simulated provider answering
// every engine call. Postgres runs in another process and is not counted.
// engine_calls/op counts the simulator's model calls.
func BenchmarkChatCPU(b *testing.B) {
	cb := setupChatBench(b, sim.Config{
		TimeScale: 1e-6,
		Engines:   map[string]sim.EngineProfile{"gemini-flash": {Dissent: 1}},
	}, nil)
	if _, err := cb.store.AddFunds(context.Background(), &core.AddFundsParams{OrgID: cb.org.ID, Amount: 1_000_000 * core.MicrosPerUSD, Memo: "bench"}); err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	b.Cleanup(client.CloseIdleConnections)
	cases := []struct {
		name, body, lane string
		rounds           float64
	}{
		{"deliberation", chatBody(benchTwoRoundsMode, "Should a twelve-person team split its monolith into microservices this year?", ""), "panel", 2},
		{"express", chatBody("conclave-standard", "What is 2 + 2?", ""), "express", 1},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			calls0 := cb.prov.Simulator().Stats().Total()
			b.ResetTimer()
			cpu0 := cpuTime(b)
			for i := 0; i < b.N; i++ {
				status, panel, err := cb.chat(ctx, client, c.body)
				if err != nil || status != 200 {
					b.Fatalf("status %d: %v", status, err)
				}
				if panel["lane"] != c.lane || panel["rounds"] != c.rounds {
					b.Fatalf("lane %v, rounds %v: want %s, %v", panel["lane"], panel["rounds"], c.lane, c.rounds)
				}
			}
			cpu := cpuTime(b) - cpu0
			b.StopTimer()
			calls := cb.prov.Simulator().Stats().Total() - calls0
			b.ReportMetric(float64(cpu)/float64(time.Millisecond)/float64(b.N), "cpu_ms/deliberation")
			b.ReportMetric(float64(calls)/float64(b.N), "engine_calls/op")
		})
	}
}

// BenchmarkChatInFlight holds many deliberations in flight at once on one
// process: every seat call takes 30 simulated seconds at TimeScale 1 (the
// seats' engines atlas, sonnet and gemini-flash are pinned to exactly 30 s;
// classifier, judge and synthesis are other engines at the quick profile's
// 50–600 ms), on a one-round mode without an express lane. The engine's
// default hedging starts each seat's backup (also a 30 s engine) beside the
// slow primary, so a deliberation holds six engine calls open. All N
// requests are sent at once over loopback and the benchmark waits for all.
// Each run happens once whatever b.N.
//
// It reports, for N = 100 (the baseline) and N = 10,000 (the goal):
//
//   - peak_rss_MiB: VmHWM of this process, reset just before the requests
//     go out. It includes the in-process simulated provider (a handler
//     goroutine and stream buffers per engine call) and the load
//     generator (a goroutine, connection state and buffers per call), so it
//     overstates the server alone. Postgres is another process and is not
//     counted.
//   - goal_rss_MiB: the goal, 1 GiB, beside it.
//   - errors: responses other than a 200 panel answer, and transport errors
//     (goal: none).
//   - p50_s, max_s: wall-clock latency of one call; with no queueing a call
//     takes about 31 s, so the excess is queueing (holds and settles on the
//     database pool, CPU on two cores shared with Postgres).
//   - peak_engine_calls, peak_engine_calls_at_s: the most engine calls in
//     flight at the simulator (6 per deliberation when all are admitted)
//     and when that was first seen (sampled every 250 ms).
//
// Transport: the load generator uses HTTP/1.1, a connection per call, when
// the open-file limit allows both ends of N connections in this process;
// otherwise (10,000 calls under a 20,000 hard limit that cannot be raised
// without CAP_SYS_RESOURCE) it multiplexes them all over one unencrypted
// HTTP/2 connection, which the benchmark's server accepts (up to 20,000
// streams). The sub-benchmark name says which. Egress
// reaches the simulator over unencrypted HTTP/2 too: 60,000 concurrent
// engine calls over HTTP/1.1 would need more loopback connections to one
// port than the ephemeral port range holds. Real providers are reached over
// TLS, where egress negotiates HTTP/2 as well.
//
// It fails only on wrong results: any error fails the benchmark after the
// figures are reported.
func BenchmarkChatInFlight(b *testing.B) {
	files := raiseOpenFileLimit(b, 100_000)
	h2c := new(http.Protocols)
	h2c.SetUnencryptedHTTP2(true)
	egressClient := &http.Client{Transport: &http.Transport{
		Protocols:           h2c,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}}
	seat := sim.EngineProfile{Latency: sim.Latency{Median: 30 * time.Second, Min: 30 * time.Second, Max: 30 * time.Second}}
	cb := setupChatBench(b, sim.Config{
		TimeScale: 1,
		Engines:   map[string]sim.EngineProfile{"atlas": seat, "sonnet": seat, "gemini-flash": seat},
	}, egressClient)
	// Each call holds its ceiling (2 USD by default) until it settles.
	if _, err := cb.store.AddFunds(context.Background(), &core.AddFundsParams{OrgID: cb.org.ID, Amount: 100_000 * core.MicrosPerUSD, Memo: "bench"}); err != nil {
		b.Fatal(err)
	}
	body := chatBody(benchInFlightMode, "Should a twelve-person team split its monolith into microservices this year?", "")
	var failed []string
	for _, n := range []int{100, 10_000} {
		// Both ends of every connection are in this process: a connection
		// per call needs 2n descriptors, plus some for the rest.
		h2 := uint64(2*n+1000) > files
		proto := "http1"
		if h2 {
			proto = "h2c"
		}
		b.Run(fmt.Sprintf("n=%d/%s", n, proto), func(b *testing.B) {
			// One run whatever b.N (a -benchtime meant for BenchmarkChatCPU
			// must not repeat a 30-second run): the figures are per run.
			t0 := time.Now()
			r := inFlight(b, cb, body, n, h2)
			b.ReportMetric(float64(time.Since(t0).Nanoseconds()), "ns/op") // one run, not b.N
			b.ReportMetric(r.peakMiB, "peak_rss_MiB")
			b.ReportMetric(1024, "goal_rss_MiB")
			b.ReportMetric(float64(r.errors), "errors")
			b.ReportMetric(r.p50.Seconds(), "p50_s")
			b.ReportMetric(r.max.Seconds(), "max_s")
			b.ReportMetric(float64(r.peakCalls), "peak_engine_calls")
			b.ReportMetric(r.peakAt.Seconds(), "peak_engine_calls_at_s")
			if r.errors > 0 {
				failed = append(failed, fmt.Sprintf("n=%d: %d errors, first: %s", n, r.errors, r.firstErr))
			}
		})
	}
	if len(failed) > 0 {
		b.Fatal(strings.Join(failed, "; "))
	}
}

type inFlightResult struct {
	peakMiB   float64
	errors    int
	firstErr  string
	p50, max  time.Duration
	peakCalls int           // most engine calls in flight at the simulator
	peakAt    time.Duration // when that peak was first seen
}

// inFlight sends n chat completions at once and waits for them all.
// With h2 it sends them over unencrypted HTTP/2, all on one connection;
// otherwise over HTTP/1.1, a connection each.
func inFlight(b *testing.B, cb *chatBench, body string, n int, h2 bool) inFlightResult {
	b.Helper()
	tr := &http.Transport{
		MaxConnsPerHost:     0, // no limit: one connection per call in flight
		MaxIdleConnsPerHost: n,
		MaxIdleConns:        n,
		IdleConnTimeout:     time.Minute,
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second}).DialContext,
	}
	if h2 {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	client := &http.Client{Transport: tr}
	defer client.CloseIdleConnections()
	if h2 {
		// One connection, opened before the burst: otherwise every request
		// of the burst dials its own before the first connection is up.
		res, err := client.Get(cb.srv.URL + "/healthz")
		if err != nil {
			b.Fatal(err)
		}
		drain(res)
	}
	resetPeakRSS(b)
	ctx := context.Background()
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
			status, panel, err := cb.chat(ctx, client, body)
			lat[i] = time.Since(t0)
			if err == nil && (status != 200 || panel["lane"] != "panel") {
				err = fmt.Errorf("status %d, lane %v", status, panel["lane"])
			}
			if err != nil {
				errs.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
			}
		}()
	}
	// Sample the engine calls in flight at the simulator until all end.
	done := make(chan struct{})
	var peakCalls int
	var peakAt time.Duration
	sampled := make(chan struct{})
	t0 := time.Now()
	go func() {
		defer close(sampled)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if c := cb.prov.Simulator().Stats().InFlight; c > peakCalls {
					peakCalls, peakAt = c, time.Since(t0)
				}
			}
		}
	}()
	close(start)
	wg.Wait()
	close(done)
	<-sampled
	slices.Sort(lat)
	r := inFlightResult{
		peakMiB: float64(procStatusKiB(b, "VmHWM")) / 1024, errors: int(errs.Load()), p50: lat[n/2], max: lat[n-1],
		peakCalls: peakCalls, peakAt: peakAt,
	}
	if s, ok := firstErr.Load().(string); ok {
		r.firstErr = s
	}
	return r
}

// raiseOpenFileLimit raises this process's open-file limit towards want
// (both ends of every loopback connection are in this process) and returns
// the limit it got.
func raiseOpenFileLimit(b *testing.B, want uint64) uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Fatal(err)
	}
	if lim.Cur >= want {
		return lim.Cur
	}
	lim.Cur = max(lim.Cur, min(want, lim.Max))
	if lim.Max < want {
		// Raising the hard limit needs privilege; fall back to the hard
		// limit when it is refused.
		try := syscall.Rlimit{Cur: want, Max: want}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &try); err == nil {
			return want
		}
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Fatal(err)
	}
	b.Logf("open-file limit is %d (hard limit; raising it needs CAP_SYS_RESOURCE)", lim.Cur)
	return lim.Cur
}

// resetPeakRSS resets VmHWM to the current RSS (Linux 4.0+).
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Logf("cannot reset the peak RSS, it counts from the process start: %v", err)
	}
}

// procStatusKiB reads one "kB" field of /proc/self/status.
func procStatusKiB(b *testing.B, field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if ok && name == field {
			v, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return v
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}
