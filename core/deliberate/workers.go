package deliberate

import (
	"sync"
	"sync/atomic"
)

// maxIdleWorkers bounds the seat workers kept parked between rounds, in
// the whole process: enough for the rounds of a few dozen deliberations
// starting together, under 1 MiB of stacks.
const maxIdleWorkers = 64

// seatWorkers runs every engine's seat turns beyond each round's first.
// Its parked workers live as long as the process.
var seatWorkers = newWorkers()

// workers runs a round's seat turns on goroutines kept from one round to
// the next. A new goroutine starts with a small stack and grows it,
// copying it each time, through the depth of a seat's call (the adapter,
// egress, the HTTP client, JSON): 3.5% of a deliberation's CPU in
// BenchmarkChatCPU, where the express lane, with its one seat run on the
// caller's goroutine, paid none of it. A kept goroutine has grown its
// stack already. A turn finds an idle worker if one is parked and starts
// a new one otherwise, so a burst never waits for a worker; a worker with
// nothing to do parks while fewer than maxIdleWorkers are, and ends
// otherwise.
type workers struct {
	tasks chan func() // unbuffered: a send succeeds only into a parked worker
	idle  atomic.Int32
}

func newWorkers() *workers { return &workers{tasks: make(chan func())} }

// Go runs f on a worker, counted in wg as wg.Go counts its function.
func (w *workers) Go(wg *sync.WaitGroup, f func()) {
	wg.Add(1)
	task := func() {
		defer wg.Done()
		f()
	}
	select {
	case w.tasks <- task:
	default:
		go w.work(task)
	}
}

func (w *workers) work(task func()) {
	for {
		task()
		if w.idle.Add(1) > maxIdleWorkers {
			w.idle.Add(-1)
			return
		}
		task = <-w.tasks
		w.idle.Add(-1)
	}
}
