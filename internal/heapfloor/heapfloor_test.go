package heapfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// The tests change the process's collector settings, so none runs in
// parallel, and each gives back what it found.

func TestTargetPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name               string
		floor, live, roots uint64
		base, want         int
	}{
		{"the target lands on the floor", 64 * mib, 8 * mib, 1 * mib, 100, 622}, // 8 + 9 × 6.22 = 64 MiB
		{"a live heap at the floor keeps GOGC's rule", 64 * mib, 64 * mib, mib, 100, 100},
		{"a live heap past the floor keeps GOGC's rule", 64 * mib, 300 * mib, mib, 100, 100},
		{"never below the base", 64 * mib, 40 * mib, 10 * mib, 200, 200},           // 24/50 would be 48%
		{"the runtime's minimum stays under the floor", 64 * mib, 0, 0, 100, 1600}, // 4 MiB × 16 = 64 MiB
		{"a small floor near a small heap", 8 * mib, 2 * mib, mib, 100, 200},
	} {
		if got := targetPercent(c.floor, c.live, c.roots, c.base); got != c.want {
			t.Errorf("%s: targetPercent(%d, %d, %d, %d) = %d, want %d", c.name, c.floor, c.live, c.roots, c.base, got, c.want)
		}
	}
}

// TestFloorDefersCollection sets a floor far above this test's near-empty
// heap: the collector's target moves from a few MiB to the floor, stays
// there after collections (the finalizer sets it again from what each
// found), and 48 MiB of garbage then runs no collection; undo gives the
// target back.
func TestFloorDefersCollection(t *testing.T) {
	restore := debug.SetGCPercent(100)
	defer debug.SetGCPercent(restore)
	runtime.GC()
	const floor = 256 << 20
	if goal := heapGoal(); goal > 32<<20 {
		t.Fatalf("without a floor the target is %d MiB: this test needs a near-empty heap", goal>>20)
	}

	undo := Set(floor)
	if goal := heapGoal(); goal < floor*9/10 || goal > floor {
		t.Fatalf("target after Set(%d MiB): %d MiB, want the floor", floor>>20, goal>>20)
	}
	if n := cyclesWhileAllocating(48 << 20); n > 1 {
		t.Errorf("with a 256 MiB floor, 48 MiB of garbage ran %d collections: want at most 1", n)
	}
	for range 3 {
		runtime.GC()
		waitForFinalizers()
		if goal := heapGoal(); goal < floor*9/10 || goal > floor {
			t.Errorf("target after a collection: %d MiB, want the floor", goal>>20)
		}
		if n := cyclesWhileAllocating(48 << 20); n > 1 {
			t.Errorf("after a collection, with the floor: %d collections for 48 MiB, want at most 1", n)
		}
	}
	undo()
	undo() // twice is harmless
	if got := gogc(t); got != 100 {
		t.Errorf("GOGC after undo: %d, want 100 back", got)
	}
	runtime.GC()
	waitForFinalizers()
	if goal := heapGoal(); goal > 32<<20 {
		t.Errorf("target after undo: %d MiB, want GOGC's few MiB back", goal>>20)
	}
}

// TestLargeHeapKeepsGOGC: once the live heap is past the floor, the
// percentage goes back to GOGC's, so the floor adds nothing to a large
// heap's peak.
func TestLargeHeapKeepsGOGC(t *testing.T) {
	restore := debug.SetGCPercent(100)
	defer debug.SetGCPercent(restore)
	undo := Set(16 << 20)
	defer undo()
	runtime.GC()
	waitForFinalizers()
	if got := gogc(t); got <= 100 {
		t.Fatalf("GOGC with a small heap under a 16 MiB floor: %d, want it raised", got)
	}
	live := make([][]byte, 32)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	runtime.GC()
	waitForFinalizers()
	if got := gogc(t); got != 100 {
		t.Errorf("GOGC with 32 MiB live over a 16 MiB floor: %d, want 100", got)
	}
	runtime.KeepAlive(live)
}

// TestOffIsLeftAlone: GOGC=off is the operator's choice, and no floor
// turns the collector back on.
func TestOffIsLeftAlone(t *testing.T) {
	t.Setenv("GOGC", "off")
	restore := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(restore)
	undo := Set(64 << 20)
	runtime.GC()
	waitForFinalizers()
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Errorf("GOGC after Set with GOGC=off: %d, want -1 (off)", got)
	}
	undo()
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Errorf("GOGC after undo with GOGC=off: %d, want -1 (off)", got)
	}
}

func TestNoFloorSetsNothing(t *testing.T) {
	restore := debug.SetGCPercent(150)
	defer debug.SetGCPercent(restore)
	undo := Set(0)
	runtime.GC()
	waitForFinalizers()
	if got := gogc(t); got != 150 {
		t.Errorf("GOGC after Set(0): %d, want 150 untouched", got)
	}
	undo()
}

var sink []byte

// cyclesWhileAllocating is how many collections completed while n bytes of
// short-lived 64 KiB buffers were allocated.
func cyclesWhileAllocating(n int) uint32 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.NumGC
	for range n / (64 << 10) {
		sink = make([]byte, 64<<10)
	}
	sink = nil
	runtime.ReadMemStats(&ms)
	return ms.NumGC - before
}

// waitForFinalizers gives the finalizer goroutine the time to run what the
// last collection queued: a second object's finalizer, queued by the same
// cycle, has run by then, as the goroutine runs them in turn.
func waitForFinalizers() {
	done := make(chan struct{})
	runtime.SetFinalizer(&[16]int64{}, func(*[16]int64) { close(done) })
	runtime.GC()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
}

// heapGoal is the collector's current target, in bytes.
func heapGoal() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func gogc(t *testing.T) int {
	t.Helper()
	s := []metrics.Sample{{Name: gogcMetric}}
	metrics.Read(s)
	return int(int64(s[0].Value.Uint64()))
}
