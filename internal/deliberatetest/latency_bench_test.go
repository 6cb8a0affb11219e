package deliberatetest_test

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/conclavehq/conclave/adapters/sim"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/benchtest"
	"github.com/conclavehq/conclave/core/deliberate"
	"github.com/conclavehq/conclave/plugins/protocol/direct"
)

// benchScale is the simulator's TimeScale in the benchmark: a seed-profile
// panel's median of 28.5 simulated seconds takes 57 ms.
const benchScale = 0.002

// benchParallel is how many panels run at once.
const benchParallel = 4

// slowPanel (simulated seconds) is a panel slow enough to log its calls.
const slowPanel = 1000

// benchDeadline is the scheduled mode's straggler deadline in simulated seconds.
const benchDeadline = 5

// minPanels is the fewest panels each variant runs, whatever -benchtime
// says: a p99 needs a few hundred samples beyond it to mean anything.
const minPanels = 1000

// BenchmarkDeliberationLatency runs at least minPanels panels on the
// simulator's seed profile twice: with this engine's scheduling — quorum 2
// of 3, a straggler deadline of 5 simulated seconds, hedging with the
// backup after 2.5 (half the deadline, the derived default) or the
// engine's recent 90th percentile, whichever is longer — and with
// wait-for-all (quorum 0, no hedging). Both run the same mode otherwise:
// three seats, critique always, at most two rounds, judge and synthesis.
// It reports each variant's panel latency quantiles in simulated seconds
// (wall time ÷ TimeScale, so they include the host's own overhead), their
// ratios, and the share of rounds that closed on quorum.
//
//	go test ./internal/deliberatetest -run '^$' -bench DeliberationLatency -benchtime=1000x
func BenchmarkDeliberationLatency(b *testing.B) {
	ctx := context.Background()
	cat, err := testCatalog()
	if err != nil {
		b.Fatal(err)
	}
	prov, err := startProviders(ctx, cat, sim.Config{Profile: sim.ProfileSeed, TimeScale: benchScale, Seed: 7})
	if err != nil {
		b.Fatal(err)
	}
	defer prov.Stop(ctx)
	e, err := deliberate.New(deliberate.Config{Catalog: cat, Caller: prov, Judge: direct.New(), Seed: func() int64 { return 1 }})
	if err != nil {
		b.Fatal(err)
	}
	deadline := time.Duration(benchDeadline * benchScale * float64(time.Second))
	scheduled := testMode(func(d *core.Deliberation) {
		d.ExpressThreshold = 0
		d.Quorum = 2
		d.StragglerDeadline = deadline
	})
	waitAll := testMode(func(d *core.Deliberation) { d.ExpressThreshold = 0 })

	n := max(b.N, minPanels)
	if benchtest.Smoking() {
		n = 20 // the smoke form (make test)
	}
	b.ResetTimer()
	sq, quorumShare := panels(b, e, scheduled, n, "a")
	wq, _ := panels(b, e, waitAll, n, "b")
	b.StopTimer()
	for _, p := range []struct {
		name string
		q    []float64
	}{{"sched", sq}, {"wfa", wq}} {
		b.ReportMetric(quantile(p.q, 0.50), p.name+"_p50_s")
		b.ReportMetric(quantile(p.q, 0.90), p.name+"_p90_s")
		b.ReportMetric(quantile(p.q, 0.99), p.name+"_p99_s")
	}
	b.ReportMetric(quantile(sq, 0.50)/quantile(wq, 0.50), "p50_ratio")
	b.ReportMetric(quantile(sq, 0.99)/quantile(wq, 0.99), "p99_ratio")
	b.ReportMetric(quorumShare, "quorum_close_share")

	// The host's own share: the same scheduled panels with every simulated
	// delay near zero, in the same simulated seconds (wall ÷ benchScale).
	fast, err := startProviders(ctx, cat, sim.Config{Profile: sim.ProfileSeed, TimeScale: 1e-6, Seed: 7})
	if err != nil {
		b.Fatal(err)
	}
	defer fast.Stop(ctx)
	fe, err := deliberate.New(deliberate.Config{Catalog: cat, Caller: fast, Judge: direct.New(), Seed: func() int64 { return 1 }})
	if err != nil {
		b.Fatal(err)
	}
	oq, _ := panels(b, fe, scheduled, min(n, 200), "c")
	b.ReportMetric(quantile(oq, 0.50), "overhead_p50_s")
}

// panels runs n panels, eight at a time, and returns their latencies in
// simulated seconds, sorted, and the share of rounds closed on quorum.
func panels(b *testing.B, e *deliberate.Engine, mode *core.Mode, n int, tag string) ([]float64, float64) {
	var mu sync.Mutex
	lat := make([]float64, 0, n)
	rounds, quorum := 0, 0
	sem := make(chan struct{}, benchParallel)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			q := fmt.Sprintf("Question %s-%d: should we move the team's deployments to a weekly release train, and why?", tag, i)
			start := time.Now()
			res, err := e.Run(context.Background(), &deliberate.Request{Mode: mode, Tier: core.TierPlus, Messages: []core.Message{{Role: core.RoleUser, Content: q}}})
			took := time.Since(start)
			if err != nil {
				b.Error(err)
				return
			}
			if sec := took.Seconds() / benchScale; sec > slowPanel {
				// No schedule should take this long; show where the time went.
				for _, c := range res.Calls {
					b.Logf("slow panel (%.0f s): round %d %s %s %s %.1f s", sec, c.Round, c.Role, c.Engine, c.Outcome, c.Ended.Sub(c.Started).Seconds()/benchScale)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			lat = append(lat, took.Seconds()/benchScale)
			for _, rd := range res.Rounds {
				rounds++
				if rd.Closed == deliberate.RoundQuorum {
					quorum++
				}
			}
		})
	}
	wg.Wait()
	sort.Float64s(lat)
	return lat, float64(quorum) / float64(max(rounds, 1))
}

// quantile reads the q-quantile of sorted values (nearest rank).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
