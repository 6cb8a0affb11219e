package execute

import (
	"sync"
	"time"
)

// Health is what a replica has seen of its judge engines: an engine whose
// last DownAfter calls all failed, the last of them within DownFor, is not
// working, and a launch that needs its judge is provider_unavailable
// (runs.Deps.JudgeWorking). One answer puts it back; so does DownFor
// passing without a call, since a run launched then is how it is tried
// again. The judges have no backup engine, so an engine down is its judge
// down. Each replica keeps its own record, from the judgments it made. It
// is safe for concurrent use; the zero value is not: use NewHealth.
type Health struct {
	now     func() time.Time
	mu      sync.Mutex
	engines map[string]*engineHealth
}

type engineHealth struct {
	failures int       // consecutive failed calls
	last     time.Time // the last of them
}

// DownAfter and DownFor decide when an engine is not working: DownAfter
// failed calls in a row, the last within DownFor. A judgment retries an
// unreadable reply once, and a question's job is retried, so three
// failures in a row are not one unlucky call.
const (
	DownAfter = 3
	DownFor   = 5 * time.Minute
)

// NewHealth returns an empty record on the wall clock (now, when non-nil,
// replaces it).
func NewHealth(now func() time.Time) *Health {
	if now == nil {
		now = time.Now
	}
	return &Health{now: now, engines: map[string]*engineHealth{}}
}

// Record records one call to engineID: answered (ok) or failed.
func (h *Health) Record(engineID string, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.engines[engineID]
	if e == nil {
		e = &engineHealth{}
		h.engines[engineID] = e
	}
	if ok {
		e.failures = 0
		return
	}
	e.failures++
	e.last = h.now()
}

// Working reports whether engineID may be counted on: not DownAfter
// failures in a row, the last within DownFor. An engine never called works.
func (h *Health) Working(engineID string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.engines[engineID]
	return e == nil || e.failures < DownAfter || h.now().Sub(e.last) >= DownFor
}
