package access

import (
	"sync"
	"time"
)

// expiring is a bounded map whose entries lapse at their own time: the
// caches of key lookups, verified tokens and grant checks. When it is full,
// lapsed entries are dropped; if that frees nothing, the new entry is not
// kept (the caller simply asks again next time). Safe for concurrent use.
type expiring[K comparable, V any] struct {
	max int

	mu      sync.Mutex
	entries map[K]expiringEntry[V]
}

type expiringEntry[V any] struct {
	v     V
	until time.Time
}

func newExpiring[K comparable, V any](max int) *expiring[K, V] {
	return &expiring[K, V]{max: max, entries: map[K]expiringEntry[V]{}}
}

// get returns k's value while it has not lapsed at now.
func (c *expiring[K, V]) get(k K, now time.Time) (V, bool) {
	c.mu.Lock()
	e, ok := c.entries[k]
	c.mu.Unlock()
	if !ok || !now.Before(e.until) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// put keeps v for k until until.
func (c *expiring[K, V]) put(k K, v V, until, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max {
		for old, e := range c.entries {
			if !now.Before(e.until) {
				delete(c.entries, old)
			}
		}
		if len(c.entries) >= c.max {
			return
		}
	}
	c.entries[k] = expiringEntry[V]{v: v, until: until}
}
