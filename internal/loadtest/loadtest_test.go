package loadtest

import (
	"errors"
	"flag"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestOpenLoopRunsEveryCallOnSchedule(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	seen := make([]atomic.Bool, 50)
	r := OpenLoop(100, 500*time.Millisecond, func(i int) error {
		calls.Add(1)
		seen[i].Store(true)
		if i%10 == 3 {
			return errors.New("refused")
		}
		time.Sleep(2 * time.Millisecond)
		return nil
	})
	require.Equal(t, 50, r.N)
	require.EqualValues(t, 50, calls.Load())
	for i := range seen {
		require.True(t, seen[i].Load(), "call %d ran", i)
	}
	require.Equal(t, 5, r.Errors)
	require.EqualError(t, r.FirstErr, "refused")
	require.Len(t, r.Latencies, 50)
	require.IsNonDecreasing(t, r.Latencies)
	// The last call starts 490 ms after the first.
	require.GreaterOrEqual(t, r.Elapsed, 490*time.Millisecond)
	require.GreaterOrEqual(t, r.Q(0.99), 2*time.Millisecond, "a successful call's sleep counts")
	require.Equal(t, r.Latencies[0], r.Q(0))
	require.Equal(t, r.Latencies[49], r.Q(1))
	require.Zero(t, Result{}.Q(0.5))
}

// Each call runs on its own goroutine: a slow call delays none after it,
// and its own latency counts from its schedule.
func TestOpenLoopSlowCallsDoNotDelayLaterOnes(t *testing.T) {
	t.Parallel()
	r := OpenLoop(50, 200*time.Millisecond, func(i int) error {
		if i == 0 {
			time.Sleep(300 * time.Millisecond)
		}
		return nil
	})
	require.Equal(t, 10, r.N)
	require.GreaterOrEqual(t, r.Q(1), 300*time.Millisecond)
	require.Less(t, r.Q(0.5), 100*time.Millisecond, "the others did not wait for the first")
}

func TestSendOK(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad" {
			http.Error(w, "no such thing", http.StatusTeapot)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest("GET", srv.URL+"/good", nil)
	require.NoError(t, SendOK(srv.Client(), req))
	req, _ = http.NewRequest("GET", srv.URL+"/good", nil)
	body, err := Send(srv.Client(), req)
	require.NoError(t, err)
	require.Equal(t, "ok", string(body))
	req, _ = http.NewRequest("GET", srv.URL+"/bad", nil)
	require.EqualError(t, SendOK(srv.Client(), req), "status 418: no such thing\n")
	req, _ = http.NewRequest("GET", srv.URL+"/bad", nil)
	body, err = Send(srv.Client(), req)
	require.EqualError(t, err, "status 418: no such thing\n")
	require.Nil(t, body)
	require.Equal(t, 1.5, MS(1500*time.Microsecond))
}

// The sweep always runs the rates up to GoalRate, stops past it at the
// first rate that fails (errors, or a p99 overhead of 10 ms or more), and
// reports the highest rate that passed with every lower one.
func TestOverheadSweepStopsPastTheGoalRateAtTheFirstFailure(t *testing.T) {
	// Each rate once, as a real window (longer than the benchmark time)
	// runs; testing.Benchmark would otherwise repeat these quick ones.
	require.NoError(t, flag.Set("test.benchtime", "1x"))
	for _, tc := range []struct {
		name    string
		failAt  int // the first rate whose gateway calls fail; 0: none
		ran     []int
		maxRate int
	}{
		{"all pass", 0, []int{100, 500, 750, 1000}, 1000},
		{"fails below the goal", 100, []int{100, 500}, 0},
		{"fails at the goal", 500, []int{100, 500}, 100},
		{"fails past the goal", 750, []int{100, 500, 750}, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rate atomic.Int64 // the rate being run, set by the direct side's first call
			var ran []int
			maxRate := -1
			testing.Benchmark(func(b *testing.B) {
				maxRate = OverheadSweep(b, Sweep{
					Window: 50 * time.Millisecond, Warmup: time.Millisecond, Rates: []int{100, 500, 750, 1000},
					Direct: func(int) error { return nil },
					Gateway: func(i int) error {
						if r := int(rate.Load()); tc.failAt > 0 && r >= tc.failAt {
							return errors.New("refused")
						}
						return nil
					},
					Around: func(b *testing.B, r int, run func() Result) Result {
						rate.Store(int64(r))
						ran = append(ran, r)
						// Only errors fail a rate here: the latencies are
						// zeroed, so a scheduling stall of a loaded machine
						// (a p99 of 10 ms) cannot end the sweep early.
						g := run()
						g.Latencies = make([]time.Duration, len(g.Latencies))
						return g
					},
				})
			})
			require.Equal(t, tc.ran, ran)
			require.Equal(t, tc.maxRate, maxRate)
		})
	}
}
