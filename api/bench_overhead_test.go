package api_test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conclavehq/conclave/adapters/sim"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/config"
)

// benchExpressMode answers every question on the express lane with the
// heuristic classifier (no classifier engine): a billed call whose only
// model call is the express seat's.
const benchExpressMode = "bench-express"

// BenchmarkGatewayOverhead measures what Conclave adds to a model call: a
// billed express call through the whole gateway (admission, policy, rate
// limit, concurrency slot, token count, idempotency claim, hold,
// classification, the express seat's call through adapter and egress,
// settlement with receipt, slot release) against a direct call to the same
// simulated engine, at fixed open-loop arrival rates. The simulated engine
// answers at once (TimeScale 1e-6), so the difference is the gateway's own.
//
// Open loop: calls start on a fixed schedule whatever the earlier ones are
// doing, and each latency counts from its scheduled start, so queueing
// shows (no coordinated omission). Each rate runs for a few seconds; the
// direct calls and the Conclave calls run one after the other at the same
// rate in the same process, against the same Postgres.
//
// Reported per rate: p50/p99 of the direct call, of the Conclave call, and
// overhead_p50_ms/overhead_p99_ms = Conclave minus direct, beside the
// goals (p50 ≤ 1 ms and p99 ≤ 5 ms at 500 calls/s). Then the highest rate
// tried whose p99 overhead stayed under 10 ms with no errors:
// max_rate_under_10ms_p99.
func BenchmarkGatewayOverhead(b *testing.B) {
	cb := setupChatBench(b, sim.Config{TimeScale: 1e-6})
	if _, err := cb.store.AddFunds(context.Background(), &core.AddFundsParams{OrgID: cb.org.ID, Amount: 1_000_000 * core.MicrosPerUSD, Memo: "bench"}); err != nil {
		b.Fatal(err)
	}
	transport := &http.Transport{MaxIdleConnsPerHost: 4096, MaxConnsPerHost: 0, IdleConnTimeout: time.Minute}
	client := &http.Client{Transport: transport, Timeout: time.Minute}
	b.Cleanup(client.CloseIdleConnections)

	simURL := cb.prov.Simulator().Endpoint("openai") + "/chat/completions"
	simKey := cb.prov.SimulatorKey()
	direct := func(i int) error {
		body := `{"model":"atlas","messages":[{"role":"user","content":"What is 2 + 2? (` + fmt.Sprint(i) + `)"}],"max_tokens":512}`
		req, _ := http.NewRequest("POST", simURL, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+simKey)
		req.Header.Set("Content-Type", "application/json")
		return send(client, req)
	}
	gateway := func(i int) error {
		body := chatBody(benchExpressMode, fmt.Sprintf("What is 2 + 2? (%d)", i), "")
		req, _ := http.NewRequest("POST", cb.srv.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+cb.key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", core.NewID("bench"))
		return send(client, req)
	}
	// Warm both paths: connections, caches, the policy's memo.
	for i := range 200 {
		if err := direct(i); err != nil {
			b.Fatal(err)
		}
		if err := gateway(i); err != nil {
			b.Fatal(err)
		}
	}

	const window = 4 * time.Second
	best := 0
	for _, rate := range []int{100, 250, 500, 750, 1000, 1500} {
		var d, g openLoopResult
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) {
			d = openLoop(rate, window, direct)
			g = openLoop(rate, window, gateway)
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
			b.ReportMetric(float64(g.errors+d.errors), "errors")
			if g.errors+d.errors > 0 {
				b.Logf("rate %d: first error: %v", rate, cmpOr(g.firstErr, d.firstErr))
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

func cmpOr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func send(client *http.Client, req *http.Request) error {
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
