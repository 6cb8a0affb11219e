package api

import (
	"context"
	"sync"
	"time"

	"github.com/conclavehq/conclave/core"
)

// keyCache caches successful key lookups by key hash for a few seconds, so a
// busy key does not cost a database round trip per request. It never holds a
// secret. A revocation or suspension takes effect within ttl. Unknown keys
// are not cached. Safe for concurrent use.
type keyCache struct {
	store core.Store
	ttl   time.Duration
	max   int

	mu      sync.Mutex
	entries map[string]keyEntry
}

type keyEntry struct {
	key     *core.Key
	org     *core.Org
	expires time.Time
}

func newKeyCache(store core.Store, ttl time.Duration) *keyCache {
	return &keyCache{store: store, ttl: ttl, max: 10_000, entries: map[string]keyEntry{}}
}

func (c *keyCache) lookup(ctx context.Context, hash []byte) (*core.Key, *core.Org, error) {
	if c.ttl <= 0 {
		return c.store.KeyByHash(ctx, hash)
	}
	now := time.Now()
	c.mu.Lock()
	e, ok := c.entries[string(hash)]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.key, e.org, nil
	}
	key, org, err := c.store.KeyByHash(ctx, hash)
	if err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	if len(c.entries) >= c.max {
		for h, old := range c.entries {
			if !now.Before(old.expires) {
				delete(c.entries, h)
			}
		}
		if len(c.entries) >= c.max {
			clear(c.entries)
		}
	}
	c.entries[string(hash)] = keyEntry{key: key, org: org, expires: now.Add(c.ttl)}
	c.mu.Unlock()
	return key, org, nil
}
