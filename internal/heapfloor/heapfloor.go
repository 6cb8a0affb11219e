// Package heapfloor keeps the Go collector from running while the heap is
// small.
//
// Under GOGC the collector runs each time the heap grows by a share of
// what the last cycle found live (by default as much again as the live
// heap, its goroutine stacks and globals). A gateway's live heap is small
// — a few MiB of caches and pools — while it allocates the same bytes for
// every call whatever that heap holds, so it collects every few MiB of
// allocation and spends a large share of its CPU doing so. A floor raises
// the target to a fixed size while the live heap is far below it, so that
// the collector waits until the heap reaches the floor; once the live
// heap is large enough that GOGC's own target passes the floor, GOGC's
// rule applies unchanged, and so does a memory limit (GOMEMLIMIT,
// debug.SetMemoryLimit), which bounds the heap whatever the target.
//
// The floor is kept by a finalizer that runs after every collection and
// sets the percentage that puts the next target at the floor. Go has no
// minimum heap of its own; the runtime's gc guide describes the cost model
// this follows (https://go.dev/doc/gc-guide).
package heapfloor

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// runtimeMinimum is the runtime's smallest target at GOGC=100, 4 MiB,
// which it scales with the percentage: at p% the target is never below
// 4 MiB × p/100. targetPercent keeps that below the floor.
const runtimeMinimum = 4 << 20

// The runtime's figures each adjustment reads: what the last cycle found
// live, the stacks and globals GOGC's target also counts, and GOGC.
var sampleNames = [...]string{"/gc/heap/live:bytes", "/gc/scan/stack:bytes", "/gc/scan/globals:bytes"}

const gogcMetric = "/gc/gogc:percent"

// floor is one Set's state, reached by the finalizer after each cycle.
type floor struct {
	mu      sync.Mutex
	bytes   uint64
	base    int // the percentage the process ran with: 100 or GOGC's
	current int
	stopped bool
	samples []metrics.Sample
}

// sentinel is the object whose finalizer runs after each collection: it
// is unreachable from the moment its finalizer is set, and setting it
// again in the finalizer arms it for the next cycle.
type sentinel struct{ f *floor }

// Set keeps the collector's target at no less than bytes from the next
// collection on, and returns a function that stops it and gives back the
// percentage the process had. A floor of 0 or less, or GOGC=off in the
// environment (the operator has turned the collector's pacing off), sets
// nothing. Only one floor should be set at a time in a process.
func Set(bytes int64) (undo func()) {
	base, ok := basePercent()
	if bytes <= 0 || !ok {
		return func() {}
	}
	f := &floor{bytes: uint64(bytes), base: base, current: base, samples: make([]metrics.Sample, len(sampleNames))}
	for i, name := range sampleNames {
		f.samples[i].Name = name
	}
	// The sentinel first, then one collection run to its end, then the
	// percentage from what that collection found. An object allocated
	// while a cycle marks counts as reached in it, so a sentinel armed
	// during a cycle would miss that cycle's end, which would set its
	// target with a percentage chosen for the live heap before it, with
	// nothing to correct it until the cycle after. runtime.GC waits for a
	// cycle under way and then runs a whole one, in which the sentinel is
	// found whatever the moment it was armed.
	runtime.SetFinalizer(&sentinel{f: f}, collected)
	runtime.GC()
	f.adjust()
	return f.stop
}

// basePercent is the percentage the process runs with when no floor is
// set: GOGC's from the environment, else the runtime's 100. It is false
// for GOGC=off.
func basePercent() (int, bool) {
	s := []metrics.Sample{{Name: gogcMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0, false
	}
	v := s[0].Value.Uint64() // -1, when off, reads as a huge number
	if v > math.MaxInt32 || os.Getenv("GOGC") == "off" {
		return 0, false
	}
	return int(v), true
}

// collected runs after each collection: it sets the percentage for the
// next one and arms itself again, until the floor is stopped.
func collected(s *sentinel) {
	if s.f.adjust() {
		runtime.SetFinalizer(s, collected)
	}
}

// adjust sets the percentage that puts the next target at the floor, or
// the base percentage once the live heap's own target passes it. It is
// false once the floor is stopped.
func (f *floor) adjust() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return false
	}
	metrics.Read(f.samples)
	live, roots := f.samples[0].Value.Uint64(), f.samples[1].Value.Uint64()+f.samples[2].Value.Uint64()
	if percent := targetPercent(f.bytes, live, roots, f.base); percent != f.current {
		debug.SetGCPercent(percent)
		f.current = percent
	}
	return true
}

// targetPercent is the GOGC percentage that puts the collector's next
// target at floor bytes, given the live heap and the stacks and globals
// the last cycle scanned, and never below base. The runtime's target is
// live + (live + roots) × percent / 100, and at least its minimum scaled
// by the percentage, which is kept at or under the floor: with little
// scanned, the target then falls short of the floor rather than past it.
func targetPercent(floor, live, roots uint64, base int) int {
	if live >= floor {
		return base
	}
	percent := (floor - live) * 100 / max(live+roots, 1)
	percent = min(percent, floor*100/runtimeMinimum)
	return max(int(percent), base)
}

func (f *floor) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	f.stopped = true
	debug.SetGCPercent(f.base)
}
