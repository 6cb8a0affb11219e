package calls

import (
	"slices"
	"sync"
	"time"
)

// latencies keeps each mode's recent deliberation times, from which a
// repeat that finds its call still running learns how long to wait (the
// 409's Retry-After). Safe for concurrent use.
type latencies struct {
	mu     sync.Mutex
	byMode map[string]*ring
}

// latencyWindow is how many recent deliberations of a mode are kept.
const latencyWindow = 64

type ring struct {
	d    [latencyWindow]time.Duration
	n, i int
}

func newLatencies() *latencies { return &latencies{byMode: map[string]*ring{}} }

func (l *latencies) add(mode string, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.byMode[mode]
	if r == nil {
		r = &ring{}
		l.byMode[mode] = r
	}
	r.d[r.i] = d
	r.i = (r.i + 1) % latencyWindow
	r.n = min(r.n+1, latencyWindow)
}

// median is the mode's median recent deliberation time; false when none
// finished yet.
func (l *latencies) median(mode string) (time.Duration, bool) {
	l.mu.Lock()
	r := l.byMode[mode]
	if r == nil || r.n == 0 {
		l.mu.Unlock()
		return 0, false
	}
	d := slices.Clone(r.d[:r.n])
	l.mu.Unlock()
	slices.Sort(d)
	return d[len(d)/2], true
}
