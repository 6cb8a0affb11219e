package calls

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// A repeat's Retry-After is the mode's median recent deliberation time less
// what the running call has spent, plus a margin; bounded to 1–60 s. A
// mode with no history yet expects each of its rounds to run up to its
// straggler deadline, and a mode without one the configured fallback.
func TestRetryAfterFollowsTheModesRecentLatency(t *testing.T) {
	t.Parallel()
	s := &Service{cfg: Config{ConcurrencyRetryAfter: 5 * time.Second}, latency: newLatencies(), running: map[string]liveCall{}}
	m := &core.Mode{ID: "m", Deliberation: core.Deliberation{MaxRounds: 2, StragglerDeadline: 8 * time.Second}}
	require.Equal(t, 17*time.Second, s.retryAfter(m, "req_elsewhere"), "no history: two rounds of 8 s, and the margin")
	bare := &core.Mode{ID: "bare", Deliberation: core.Deliberation{MaxRounds: 2}}
	require.Equal(t, 6*time.Second, s.retryAfter(bare, "req_elsewhere"), "no history, no straggler deadline: the fallback and the margin")
	long := &core.Mode{ID: "long", Deliberation: core.Deliberation{MaxRounds: 3, StragglerDeadline: 45 * time.Second}}
	require.Equal(t, maxRetryAfter, s.retryAfter(long, "req_elsewhere"), "never past what clients honour")

	for _, d := range []time.Duration{10, 12, 14, 100, 11} {
		s.latency.add("m", d*time.Second)
	}
	med, ok := s.latency.median("m")
	require.True(t, ok)
	require.Equal(t, 12*time.Second, med)
	require.Equal(t, 13*time.Second, s.retryAfter(m, "req_elsewhere"), "a call of another replica: the whole median")

	s.running["req_here"] = liveCall{start: time.Now().Add(-4 * time.Second)}
	got := s.retryAfter(m, "req_here")
	require.InDelta(t, float64(9*time.Second), float64(got), float64(100*time.Millisecond), "12 s expected, 4 s spent, 1 s margin")

	s.running["req_late"] = liveCall{start: time.Now().Add(-30 * time.Second)}
	require.Equal(t, 4*time.Second, s.retryAfter(m, "req_late"), "past the median: a quarter of it more")

	for range latencyWindow {
		s.latency.add("slow", 10*time.Minute)
	}
	require.Equal(t, maxRetryAfter, s.retryAfter(&core.Mode{ID: "slow"}, "x"), "never past what clients honour")
}

// A claim answers a repeat only from the API key that made it; a claim
// recorded before claims carried their key answers a repeat of the same
// request.
func TestClaimBelongsToItsKey(t *testing.T) {
	t.Parallel()
	body := hashOf("the request")
	claim := keyedHash("key_a", body)
	require.Len(t, claim, 32)
	require.True(t, claimedBy(claim, "key_a", body))
	require.True(t, claimedBy(claim, "key_a", hashOf("another body")), "the same key, another body: its own claim")
	require.False(t, claimedBy(claim, "key_b", body), "another key, the same body")

	legacy := body // a claim recorded before: the whole request hash
	require.True(t, claimedBy(legacy, "key_b", body), "an earlier claim replays to the same request")
	require.False(t, claimedBy(legacy, "key_b", hashOf("another body")))
	require.Len(t, keyedHash("key_a", nil), 32, "a request without a hash still gets a keyed one")
}
