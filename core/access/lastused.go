package access

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// KeyToucher records when keys were last used; core.Dashboard satisfies
// it.
type KeyToucher interface {
	TouchKeys(ctx context.Context, used map[string]time.Time) error
}

// lastUsed keeps, in memory, when each key last authenticated since the
// last flush: no statement is added to a call for it (PEOPLE.md, the hot
// path stays lean). Safe for concurrent use.
type lastUsed struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

func (l *lastUsed) touch(keyID string, at time.Time) {
	l.mu.Lock()
	if l.seen == nil {
		l.seen = map[string]time.Time{}
	}
	l.seen[keyID] = at
	l.mu.Unlock()
}

// take returns what was seen since the last take, and forgets it.
func (l *lastUsed) take() map[string]time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := l.seen
	l.seen = nil
	return seen
}

// putBack returns times a failed flush took, keeping any newer one.
func (l *lastUsed) putBack(seen map[string]time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[string]time.Time{}
	}
	for id, at := range seen {
		if cur, ok := l.seen[id]; !ok || cur.Before(at) {
			l.seen[id] = at
		}
	}
}

// FlushLastUsed writes when keys were last used, as seen since the last
// flush, to to. On failure what it took is kept for the next flush.
func (s *Service) FlushLastUsed(ctx context.Context, to KeyToucher) error {
	seen := s.used.take()
	if len(seen) == 0 {
		return nil
	}
	if err := to.TouchKeys(ctx, seen); err != nil {
		s.used.putBack(seen)
		return err
	}
	return nil
}

// KeepLastUsed flushes when keys were last used every interval until ctx
// ends, then once more (with a few seconds of its own) so that a clean
// shutdown loses nothing. It returns when that last flush is done.
func (s *Service) KeepLastUsed(ctx context.Context, to KeyToucher, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if err := s.FlushLastUsed(ctx, to); err != nil && ctx.Err() == nil {
				log.Warn("recording when keys were last used", slog.String("error", err.Error()))
			}
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := s.FlushLastUsed(fctx, to); err != nil {
				log.Warn("recording when keys were last used", slog.String("error", err.Error()))
			}
			return
		}
	}
}
