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

// TestWorkersNeverQueueATurn starts more turns than may stay parked, each
// waiting until all have started: they all run at once, so a turn never
// waits for a worker to come free, in a first round and in a second that
// finds workers parked by the first.
func TestWorkersNeverQueueATurn(t *testing.T) {
	w := newWorkers()
	const n = 2*maxIdleWorkers + 10
	for round := range 2 {
		var started, wg sync.WaitGroup
		started.Add(n)
		all := make(chan struct{})
		go func() { started.Wait(); close(all) }()
		var late atomic.Int32
		gaveUp := make(chan struct{}) // after one timeout the rest do not wait
		var giveUp sync.Once
		for range n {
			w.Go(&wg, func() {
				started.Done()
				select {
				case <-all:
				case <-gaveUp:
					late.Add(1)
				case <-time.After(10 * time.Second):
					late.Add(1)
					giveUp.Do(func() { close(gaveUp) })
				}
			})
		}
		wg.Wait()
		if l := late.Load(); l > 0 {
			t.Fatalf("round %d: %d of %d turns never saw the others start: a turn waited for a worker", round, l, n)
		}
	}
}
