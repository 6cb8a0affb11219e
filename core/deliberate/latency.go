package deliberate

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// latencyWindow is how many recent answer latencies an engine keeps.
	latencyWindow = 256
	// hedgeMinSamples is how many an engine needs before its percentile
	// counts; with fewer, the mode's hedge delay applies alone.
	hedgeMinSamples = 16
	// latencyRefresh is how often, in samples, the sorted snapshot that
	// percentiles are read from is rebuilt.
	latencyRefresh = 8
	// DefaultHedgePercentile is the percentile of an engine's recent
	// latencies past which its primary is hedged, when the mode sets none.
	DefaultHedgePercentile = 50
	// hedgeBurst is how many hedges an engine may start beyond its budget
	// (see latencies.earn): what a fresh engine starts with, and the most
	// it can save up.
	hedgeBurst = 16
)

// latencies is one engine's recent answer latencies: a ring of the last
// latencyWindow, and a sorted snapshot of it that readers take without a
// lock. The snapshot lags the ring by fewer than latencyRefresh samples.
type latencies struct {
	mu     sync.Mutex
	ring   [latencyWindow]time.Duration
	n      int // samples ever recorded
	sorted atomic.Pointer[[]time.Duration]
	// credit is how many hedges the engine may start now, its budget, in
	// millionths of a hedge.
	credit int64
}

// aHedge is one hedge of credit.
const aHedge = 1_000_000

// earn adds a hedgeable primary's share of a hedge to the budget: 2·(100−p)%
// of one, twice as many as a steady engine's primaries overrun its p-th
// percentile. (At exactly that many the credit would hover at zero and
// refuse hedges a steady engine should get: on the simulator's seed
// profile that doubled the 99th-percentile panel latency.) Credit saves up
// to hedgeBurst.
func (l *latencies) earn(p float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.credit = min(l.credit+int64(math.Round((100-p)*aHedge/50)), hedgeBurst*aHedge)
}

// spend takes one hedge from the budget; false when there is none left.
func (l *latencies) spend() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.credit < aHedge {
		return false
	}
	l.credit -= aHedge
	return true
}

// add records one answer's latency.
func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ring[l.n%latencyWindow] = d
	l.n++
	if l.n%latencyRefresh != 0 || l.n < hedgeMinSamples {
		return
	}
	s := slices.Clone(l.ring[:min(l.n, latencyWindow)])
	slices.Sort(s)
	l.sorted.Store(&s)
}

// percentile is the p-th percentile (nearest rank) of the snapshot; false
// while the engine has too few samples.
func (l *latencies) percentile(p float64) (time.Duration, bool) {
	sp := l.sorted.Load()
	if sp == nil {
		return 0, false
	}
	s := *sp
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)], true
}

// hedgeDelay is how long a primary on the engine runs before its backup is
// started beside it: the mode's hedge delay (floor), or the engine's recent
// p-th percentile latency when that is longer and the engine has answered
// often enough to have one.
func (l *latencies) hedgeDelay(floor time.Duration, p float64) time.Duration {
	if q, ok := l.percentile(p); ok && q > floor {
		return q
	}
	return floor
}

// latencyOf is the engine's record, created (with a full burst of hedge
// credit) on first use.
func (e *Engine) latencyOf(engineID string) *latencies {
	if l, ok := e.lat.Load(engineID); ok {
		return l.(*latencies)
	}
	l, _ := e.lat.LoadOrStore(engineID, &latencies{credit: hedgeBurst * aHedge})
	return l.(*latencies)
}
