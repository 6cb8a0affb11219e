package deliberate

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// slowCaller answers every engine after its delay, or when ctx ends. The
// hedging tests run it in a synctest bubble, where the delays pass on the
// bubble's clock: no test waits for them or depends on the machine's speed.
type slowCaller struct {
	mu    sync.Mutex
	delay map[string]time.Duration
}

func (s *slowCaller) set(engineID string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay[engineID] = d
}

func (s *slowCaller) Call(ctx context.Context, engineID, _ string, _ *core.SeatRequest) (*core.SeatAnswer, error) {
	s.mu.Lock()
	d := s.delay[engineID]
	s.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return &core.SeatAnswer{Text: "An answer from " + engineID + ".", InputTokens: 10, OutputTokens: 5, Finish: core.FinishStop}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// hedgeRig is an engine with one seat (x/primary, backed up by x/backup)
// and unhedged staff, on a slowCaller.
type hedgeRig struct {
	e      *Engine
	caller *slowCaller
	mode   *core.Mode
	// alone is the mode with the seat's backup taken away: it gives the
	// primary a history without hedging or touching its hedge budget.
	alone *core.Mode
}

func newHedgeRig(t *testing.T, hedgeAfter time.Duration, pct float64) *hedgeRig {
	t.Helper()
	var engines []core.Engine
	for _, id := range []string{"x/primary", "x/backup", "x/judge", "x/synth"} {
		engines = append(engines, core.Engine{ID: id, Family: "x", MaxTier: core.TierPro, Adapter: "openai", InputPerMTok: 1_000_000, OutputPerMTok: 2_000_000})
	}
	cat, err := core.NewCatalog(engines, nil)
	require.NoError(t, err)
	c := &slowCaller{delay: map[string]time.Duration{"x/judge": time.Second, "x/synth": time.Second}}
	e, err := New(Config{Catalog: cat, Caller: c, Judge: firstProtocol{}, HedgeAfter: hedgeAfter, Seed: func() int64 { return 1 }})
	require.NoError(t, err)
	mode := &core.Mode{ID: "m", Deliberation: core.Deliberation{
		Seats:           map[core.Tier][]core.Seat{core.TierPlus: {{Engine: "x/primary", Backup: "x/backup"}}},
		Staff:           map[string]core.Staff{"judge": {Engine: "x/judge"}, "synthesis": {Engine: "x/synth"}},
		Critique:        core.CritiqueNever,
		MaxRounds:       1,
		HedgePercentile: pct,
	}}
	alone := *mode
	alone.Deliberation.Seats = map[core.Tier][]core.Seat{core.TierPlus: {{Engine: "x/primary"}}}
	return &hedgeRig{e: e, caller: c, mode: mode, alone: &alone}
}

// run deliberates once with the primary taking primary and the backup
// taking backup, and returns the seat's turn and its calls.
func (h *hedgeRig) run(t *testing.T, primary, backup time.Duration) (SeatTurn, []Call) {
	t.Helper()
	return h.runMode(t, h.mode, primary, backup)
}

func (h *hedgeRig) runMode(t *testing.T, mode *core.Mode, primary, backup time.Duration) (SeatTurn, []Call) {
	t.Helper()
	h.caller.set("x/primary", primary)
	h.caller.set("x/backup", backup)
	res, err := h.e.Run(context.Background(), &Request{Mode: mode, Tier: core.TierPlus, Messages: []core.Message{{Role: core.RoleUser, Content: "Should we rewrite the scheduler?"}}})
	require.NoError(t, err)
	var calls []Call
	for _, c := range res.Calls {
		if c.Seat != "" {
			calls = append(calls, c)
		}
	}
	return res.Rounds[0].Seats[0], calls
}

// warm gives the primary engine n answers, the i-th taking at(i), in
// deliberations where it has no backup.
func (h *hedgeRig) warm(t *testing.T, n int, at func(i int) time.Duration) {
	t.Helper()
	for i := range n {
		h.runMode(t, h.alone, at(i), time.Hour)
	}
}

// An engine whose answers all take about 30 s is not hedged at the mode's
// 15 s once its history shows that 30 s is its normal; while it has no
// history, it is.
func TestSteadyEngineIsNotHedgedAfterWarmUp(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const x = 30 * time.Second
		h := newHedgeRig(t, x/2, 0)

		turn, calls := h.run(t, x*3/4, x)
		require.True(t, turn.Hedged, "cold: the primary is hedged after the mode's delay")
		require.Equal(t, "x/primary", turn.Engine)
		require.Len(t, calls, 2)
		require.Equal(t, RoleHedge, calls[1].Role)
		require.Equal(t, OutcomeCancelled, calls[1].Outcome)
		require.Equal(t, x/2, calls[1].Started.Sub(calls[0].Started))

		// About 30 s each: 29.1 s to 30.9 s.
		h.warm(t, 40, func(i int) time.Duration { return x + time.Duration(i%7-3)*300*time.Millisecond })
		turn, calls = h.run(t, x*3/4, x)
		require.False(t, turn.Hedged, "warm: 22.5 s is fast for this engine")
		require.Len(t, calls, 1)
		require.Equal(t, OutcomeOK, calls[0].Outcome)
	})
}

// A primary far slower than its engine's history is hedged at the
// history's percentile (the mode's, else the default 50th), or at the
// mode's delay when that is longer.
func TestSlowPrimaryIsHedgedAtItsPercentile(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHedgeRig(t, time.Second, 90)
		// 1 s to 10 s, evenly: the 90th percentile is 9 s.
		h.warm(t, 100, func(i int) time.Duration { return time.Duration(i%10+1) * time.Second })
		turn, calls := h.run(t, 10*time.Minute, 2*time.Second)
		require.True(t, turn.Hedged)
		require.Equal(t, "x/backup", turn.Engine)
		require.Len(t, calls, 2)
		require.Equal(t, OutcomeCancelled, calls[0].Outcome)
		require.Equal(t, RoleHedge, calls[1].Role)
		require.Equal(t, OutcomeOK, calls[1].Outcome)
		require.Equal(t, 9*time.Second, calls[1].Started.Sub(calls[0].Started))
	})
	synctest.Test(t, func(t *testing.T) {
		h := newHedgeRig(t, time.Second, 0)
		h.warm(t, 100, func(i int) time.Duration { return time.Duration(i%10+1) * time.Second })
		_, calls := h.run(t, 10*time.Minute, 2*time.Second)
		require.Len(t, calls, 2)
		require.Equal(t, 5*time.Second, calls[1].Started.Sub(calls[0].Started), "the default percentile: 50")
	})
	synctest.Test(t, func(t *testing.T) {
		h := newHedgeRig(t, 20*time.Second, 0)
		h.warm(t, 100, func(i int) time.Duration { return time.Duration(i%10+1) * time.Second })
		_, calls := h.run(t, 10*time.Minute, 2*time.Second)
		require.Len(t, calls, 2)
		require.Equal(t, 20*time.Second, calls[1].Started.Sub(calls[0].Started), "the mode's delay is the floor")
	})
}

func TestHedgeDelay(t *testing.T) {
	t.Parallel()
	e := &Engine{}
	l := e.latencyOf("x/a")
	require.Equal(t, time.Second, l.hedgeDelay(time.Second, 90), "no history: the floor")
	for i := 1; i < hedgeMinSamples; i++ {
		l.add(time.Duration(i) * time.Minute)
	}
	require.Equal(t, time.Second, l.hedgeDelay(time.Second, 90), "too few samples: the floor")
	l.add(hedgeMinSamples * time.Minute)
	require.Equal(t, 15*time.Minute, l.hedgeDelay(time.Second, 90), "16 samples: nearest rank 15")
	require.Equal(t, 16*time.Minute, l.hedgeDelay(time.Second, 100))
	require.Equal(t, time.Hour, l.hedgeDelay(time.Hour, 90), "the floor when longer")

	// The window keeps the last 256 samples: after 1,000 cycling through
	// 1 ms … 256 ms, it holds each of them once.
	l = e.latencyOf("x/b")
	for i := range 1000 {
		l.add(time.Duration(i%256+1) * time.Millisecond)
	}
	require.Equal(t, 231*time.Millisecond, l.hedgeDelay(time.Millisecond, 90))
	require.Equal(t, 128*time.Millisecond, l.hedgeDelay(time.Millisecond, 50))
	require.Equal(t, 256*time.Millisecond, l.hedgeDelay(time.Millisecond, 100))
	require.Same(t, l, e.latencyOf("x/b"))
}

func TestHedgeBudget(t *testing.T) {
	t.Parallel()
	l := (&Engine{}).latencyOf("x/a")
	for range hedgeBurst {
		require.True(t, l.spend(), "a fresh engine has a burst of hedges")
	}
	require.False(t, l.spend())
	for range 4 {
		l.earn(90)
	}
	require.False(t, l.spend(), "four primaries at p90 earn 0.8 of a hedge")
	l.earn(90)
	require.True(t, l.spend(), "five earn one")
	require.False(t, l.spend())
	for range 1000 {
		l.earn(50)
	}
	for range hedgeBurst {
		require.True(t, l.spend())
	}
	require.False(t, l.spend(), "credit saves up to the burst only")
}

// When an engine slows down for everyone at once, its hedges are held to
// its budget: the burst, not one per primary.
func TestHedgesAreBudgeted(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHedgeRig(t, time.Second, 0)
		h.warm(t, 20, func(int) time.Duration { return time.Second / 2 })
		h.caller.set("x/primary", time.Minute)
		h.caller.set("x/backup", time.Second)
		const n = 100
		hedged := make(chan bool, n)
		for range n {
			go func() {
				res, err := h.e.Run(context.Background(), &Request{Mode: h.mode, Tier: core.TierPlus, Messages: []core.Message{{Role: core.RoleUser, Content: "Should we rewrite the scheduler?"}}})
				if err != nil {
					panic(err)
				}
				hedged <- res.Rounds[0].Seats[0].Hedged
			}()
		}
		count := 0
		for range n {
			if <-hedged {
				count++
			}
		}
		require.Equal(t, hedgeBurst, count)
	})
}
