package expiring

import (
	"testing"
	"time"
)

// An entry is found until it lapses; a full map drops its lapsed entries
// first, and empties itself when every entry is live.
func TestMapLapsesAndStaysBounded(t *testing.T) {
	now := time.Now()
	m := New[string, int](2)
	m.Put("a", 1, now.Add(time.Minute), now)
	if v, ok := m.Get("a", now); !ok || v != 1 {
		t.Fatalf("a: %d %v", v, ok)
	}
	if _, ok := m.Get("a", now.Add(time.Minute)); ok {
		t.Fatal("a lapsed entry was found")
	}
	m.Put("b", 2, now.Add(time.Second), now)
	m.Put("c", 3, now.Add(time.Minute), now.Add(2*time.Second)) // full: b has lapsed and goes
	if _, ok := m.Get("a", now); !ok || m.Len() != 2 {
		t.Fatalf("a live entry went when a lapsed one could (len %d)", m.Len())
	}
	m.Put("d", 4, now.Add(time.Minute), now) // full of live entries: emptied, then d
	if _, ok := m.Get("d", now); !ok || m.Len() != 1 {
		t.Fatalf("a full map of live entries was not emptied (len %d)", m.Len())
	}
}
