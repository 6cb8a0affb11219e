package deliberate

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestWorkersRunEveryTaskAndKeepAFew runs bursts of turns: each runs once,
// Wait returns only after all have, a later round reuses the goroutines
// parked by the first instead of starting its own, and no more than
// maxIdleWorkers stay parked after a burst larger than that.
func TestWorkersRunEveryTaskAndKeepAFew(t *testing.T) {
	w := newWorkers()
	base := runtime.NumGoroutine()
	var ran atomic.Int32
	burst := func(n int, hold time.Duration) {
		var wg sync.WaitGroup
		for range n {
			w.Go(&wg, func() {
				time.Sleep(hold)
				ran.Add(1)
			})
		}
		wg.Wait()
	}

	burst(4, 10*time.Millisecond)
	if got := ran.Load(); got != 4 {
		t.Fatalf("after a round of 4 turns, %d ran", got)
	}
	parked := waitGoroutines(t, base+4)
	for range 20 { // rounds of 2, one after another, on the 4 parked workers
		burst(2, 0)
	}
	if got := ran.Load(); got != 44 {
		t.Fatalf("after 20 more rounds of 2, %d turns ran in all, want 44", got)
	}
	if n := runtime.NumGoroutine(); n > parked {
		t.Errorf("rounds after the first started goroutines of their own: %d, the parked workers %d", n, parked)
	}

	burst(3*maxIdleWorkers, 20*time.Millisecond)
	if got := ran.Load(); got != 44+3*maxIdleWorkers {
		t.Fatalf("after a burst of %d, %d turns ran in all", 3*maxIdleWorkers, got)
	}
	waitGoroutines(t, base+maxIdleWorkers)
	if idle := w.idle.Load(); idle > maxIdleWorkers {
		t.Errorf("%d workers parked, want at most %d", idle, maxIdleWorkers)
	}
}

// waitGoroutines waits until at most want goroutines are left (workers
// finishing a turn park or end just after Done), and returns how many.
func waitGoroutines(t *testing.T, want int) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= want {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines, want at most %d", n, want)
		}
		time.Sleep(time.Millisecond)
	}
}
