// Package expiring is a bounded map whose entries lapse at their own time:
// the short-lived caches of key lookups, verified tokens, grant checks,
// client metadata documents and the overview's spend sums.
package expiring

import (
	"sync"
	"time"
)

// Map holds at most its bound of entries. When a Put finds it full, the
// lapsed entries are dropped, and if that frees nothing it is emptied: a
// cache that fills with live entries starts over rather than grow. Safe
// for concurrent use.
type Map[K comparable, V any] struct {
	max int

	mu      sync.Mutex
	entries map[K]entry[V]
}

type entry[V any] struct {
	v     V
	until time.Time
}

// New returns an empty Map of at most max entries.
func New[K comparable, V any](max int) *Map[K, V] {
	return &Map[K, V]{max: max, entries: map[K]entry[V]{}}
}

// Get returns k's value while it has not lapsed at now.
func (m *Map[K, V]) Get(k K, now time.Time) (V, bool) {
	m.mu.Lock()
	e, ok := m.entries[k]
	m.mu.Unlock()
	if !ok || !now.Before(e.until) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// Put keeps v for k until until.
func (m *Map[K, V]) Put(k K, v V, until, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.entries) >= m.max {
		for old, e := range m.entries {
			if !now.Before(e.until) {
				delete(m.entries, old)
			}
		}
		if len(m.entries) >= m.max {
			clear(m.entries)
		}
	}
	m.entries[k] = entry[V]{v: v, until: until}
}

// Len is how many entries the map holds, lapsed ones included.
func (m *Map[K, V]) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.entries)
}
