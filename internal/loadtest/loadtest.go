// Package loadtest drives open-loop load for the overhead benchmarks: calls
// start on a fixed schedule whatever the earlier ones are doing, and each
// latency counts from its scheduled start, so queueing shows (no
// coordinated omission).
package loadtest

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/conclavehq/conclave/core/benchtest"
)

// Result is one open-loop run.
type Result struct {
	Latencies []time.Duration // sorted
	N         int             // calls started
	Errors    int             // calls that failed
	FirstErr  error           // the first failure, if any
	Elapsed   time.Duration   // from the first start to the last end
}

// Q is the p-quantile of the latencies (0 when there are none): the
// latency below which a p share of the calls ended.
func (r Result) Q(p float64) time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	return r.Latencies[min(len(r.Latencies)-1, int(p*float64(len(r.Latencies))))]
}

// OpenLoop starts call(i) rate times a second for window, each on its own
// goroutine at its scheduled time, and returns the latencies counted from
// the schedule.
func OpenLoop(rate int, window time.Duration, call func(i int) error) Result {
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
	r := Result{Latencies: lat, N: n, Errors: int(errs.Load()), Elapsed: time.Since(start)}
	if e, ok := firstErr.Load().(error); ok {
		r.FirstErr = e
	}
	slices.Sort(r.Latencies)
	return r
}

// SendOK sends req and reads the whole answer; anything but a 200 is an
// error that quotes the start of the body.
func SendOK(client *http.Client, req *http.Request) error {
	_, err := Send(client, req)
	return err
}

// Send is SendOK that also returns the answer's body.
func Send(client *http.Client, req *http.Request) ([]byte, error) {
	res, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d: %.300s", res.StatusCode, body)
	}
	return body, nil
}

// MS is d in milliseconds, to the microsecond.
func MS(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// GoalRate is the arrival rate of the gateway-overhead goals: p50 ≤ 1 ms
// and p99 ≤ 5 ms of overhead at 500 calls/s.
const GoalRate = 500

// DefaultRates is the arrival rates an overhead sweep tries, in order.
var DefaultRates = []int{100, 250, 500, 750, 1000, 1500}

// SmokeRates is the one rate a sweep tries in its smoke form
// (benchtest.Smoking).
var SmokeRates = []int{50}

// Sweep describes an overhead sweep: a direct call to the simulated
// provider and the same call through the gateway, at increasing rates.
type Sweep struct {
	Window  time.Duration // each measured run
	Warmup  time.Duration // the unmeasured run at the same rate before each; 3 s when 0
	Rates   []int         // DefaultRates when empty
	Direct  func(i int) error
	Gateway func(i int) error
	// Around, when set, runs the measured gateway run (run) at rate and
	// reports more figures about it, such as the gateway process's CPU.
	Around func(b *testing.B, rate int, run func() Result) Result
}

// OverheadSweep runs s: first it flushes the machine's dirty pages to disk
// (sync), then at each rate the direct calls and then the gateway
// calls, open loop, each for the warm-up unmeasured (connections, pools and
// caches settle to the rate) and then for the window. It reports per rate
// (a sub-benchmark rate=N): direct_p50_ms, direct_p99_ms, conclave_p50_ms,
// conclave_p99_ms, overhead_p50_ms and overhead_p99_ms (Conclave minus
// direct), errors, and at GoalRate the goals beside them. Rates up to
// GoalRate are always run; past it the sweep ends at the first rate whose
// p99 overhead reaches 10 ms or that has errors. Then (sub-benchmark
// max-rate) max_rate_under_10ms_p99: the highest rate that, with every
// lower rate tried, kept its p99 overhead under 10 ms with no errors; it
// is also returned.
func OverheadSweep(b *testing.B, s Sweep) (maxRate int) {
	rates := s.Rates
	if len(rates) == 0 {
		rates = DefaultRates
	}
	warmup := cmp.Or(s.Warmup, 3*time.Second)
	if benchtest.Smoking() {
		// The smoke form (make test): one low rate, a second's window.
		rates, warmup, s.Window = SmokeRates, 200*time.Millisecond, time.Second
	}
	// The setup's writes (a new PostgreSQL cluster, freshly built binaries)
	// would otherwise be written back by the kernel in the middle of a
	// measured window, stalling the synchronous commits behind them for tens
	// of milliseconds: that is the setup, not the gateway.
	syscall.Sync()
	best, failed := 0, false
	for _, rate := range rates {
		var d, g Result
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) {
			OpenLoop(rate, warmup, s.Direct)
			d = OpenLoop(rate, s.Window, s.Direct)
			OpenLoop(rate, warmup, s.Gateway)
			run := func() Result { return OpenLoop(rate, s.Window, s.Gateway) }
			if s.Around != nil {
				g = s.Around(b, rate, run)
			} else {
				g = run()
			}
			b.ReportMetric(float64(g.Elapsed.Nanoseconds())/float64(max(g.N, 1)), "ns/op")
			b.ReportMetric(MS(d.Q(0.50)), "direct_p50_ms")
			b.ReportMetric(MS(d.Q(0.99)), "direct_p99_ms")
			b.ReportMetric(MS(g.Q(0.50)), "conclave_p50_ms")
			b.ReportMetric(MS(g.Q(0.99)), "conclave_p99_ms")
			b.ReportMetric(MS(g.Q(0.50)-d.Q(0.50)), "overhead_p50_ms")
			b.ReportMetric(MS(g.Q(0.99)-d.Q(0.99)), "overhead_p99_ms")
			if rate == GoalRate {
				b.ReportMetric(1, "goal_p50_ms")
				b.ReportMetric(5, "goal_p99_ms")
			}
			b.ReportMetric(float64(g.Errors+d.Errors), "errors")
			if g.Errors+d.Errors > 0 {
				b.Logf("rate %d: first error: %v", rate, cmp.Or(g.FirstErr, d.FirstErr))
			}
		})
		if g.Errors+d.Errors > 0 || g.Q(0.99)-d.Q(0.99) >= 10*time.Millisecond {
			failed = true
		}
		if !failed {
			best = rate
		}
		if failed && rate >= GoalRate {
			break
		}
	}
	b.Run("max-rate", func(b *testing.B) {
		b.ReportMetric(float64(best), "max_rate_under_10ms_p99")
	})
	return best
}
