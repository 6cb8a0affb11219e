package sim

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var fitFlag = flag.Bool("sim.fit", false, "refit the seed profile's latency constants (BenchmarkFitSeedProfile)")

// The spec's published deliberation latency in seconds, at these levels.
var (
	specQuantiles = [3]float64{28.5, 88.2, 229.3}
	levels        = [3]float64{0.50, 0.90, 0.99}
	levelNames    = [3]string{"p50", "p90", "p99"}
)

// The panel the seed profile is calibrated for: Conclave's standard mode at
// the plus tier, run wait-for-all.
var (
	panelSeats     = [3]string{"atlas", "sonnet", "gemini-flash"}
	panelJudge     = "sonnet"
	panelSynthesis = "atlas"
)

// panelSeconds is one wait-for-all panel: round 1 (three seats in
// parallel, wait for all), round 2 (the same), judge, synthesis.
func panelSeconds(call func(model string) time.Duration) float64 {
	round := func() time.Duration {
		return max(call(panelSeats[0]), call(panelSeats[1]), call(panelSeats[2]))
	}
	return (round() + round() + call(panelJudge) + call(panelSynthesis)).Seconds()
}

// monteCarlo samples n panels from the seed profile's own sampler, sorted.
func monteCarlo(n int, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	lat := map[string]Latency{}
	for _, m := range append(panelSeats[:], panelJudge, panelSynthesis) {
		lat[m] = DefaultEngineProfile(ProfileSeed, m).Latency
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = panelSeconds(func(m string) time.Duration { return lat[m].sample(r) })
	}
	slices.Sort(out)
	return out
}

// quantile is the nearest-rank quantile of sorted values.
func quantile(sorted []float64, p float64) float64 {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func quantiles(sorted []float64) (q [3]float64) {
	for i, p := range levels {
		q[i] = quantile(sorted, p)
	}
	return q
}

// TestSeedProfileMonteCarlo checks the distribution: 50,000 panels drawn
// from the profile's sampler (no sleeping, a seed unrelated to the fit's)
// put p50, p90 and p99 within ±10% of the spec.
func TestSeedProfileMonteCarlo(t *testing.T) {
	t.Parallel()
	got := quantiles(monteCarlo(50_000, 2))
	for i := range levels {
		t.Logf("%s: %.1f s (spec %.1f s, %+.1f%%)", levelNames[i], got[i], specQuantiles[i], 100*(got[i]/specQuantiles[i]-1))
		require.InEpsilon(t, specQuantiles[i], got[i], 0.10, levelNames[i])
	}
}

// TestSeedProfileOverHTTP runs the seed profile end to end: 2,000
// wait-for-all panels whose calls are real HTTP requests in the OpenAI
// format, at TimeScale 0.02, each panel timed on the wall clock.
//
// Why these choices. The test has two jobs, and the sample it can afford
// does only one of them fully. Timing fidelity — the server sleeps what it
// sampled, no less and not much more, with ~1,000 calls in flight on a
// loaded 2-core machine — is checked against each panel's own scheduled
// latency (the X-Sim-Latency-Ms of the slowest call of each stage), which
// sampling noise cannot touch: every panel takes at least its schedule, and
// the measured p50, p90 and p99 are within ±10% of the scheduled ones. The
// distribution is checked against the spec as well, but a sample's p99 is
// noisy: with a few thousand panels a fair share of seeds put it more than
// 10% from the true p99 (measured by drawing 1,000 samples of 2,000 panels
// from the sampler), while p50 and p90 hold. So the measured p50 and p90 are
// held to the spec here, and p99 is left to TestSeedProfileMonteCarlo, which
// draws 50,000 panels from the same sampler; seed 7 was not chosen for its
// quantiles.
//
// The run must hold on a loaded 2-core CI machine, where other test
// packages compete for the cores. Two choices keep timer and HTTP overhead
// small against what is measured: TimeScale 0.05 makes the median panel
// about 1.4 s of real time, and 1,000 panels started at an even pace over
// 10 s issue about 800 calls a second, so the simulator is not queueing.
// Measured here with both cores saturated by other work: median overhead
// 7 ms per panel, measured p50 within 1% of schedule. panelCap bounds the
// run at about 25 s. The test does not call t.Parallel, so the package's
// other tests, which wait for it, cannot skew its clock.
func TestSeedProfileOverHTTP(t *testing.T) {
	if raceEnabled {
		t.Skip("wall-clock timing means nothing under the race detector's slowdown")
	}
	if testing.Short() {
		t.Skip("takes about 14 s; TestSeedProfileMonteCarlo checks the distribution")
	}
	const (
		panels = 1000
		spread = 10 * time.Second
		scale  = 0.05
	)
	b := setup(t, calibrationConfig(scale, 7))
	start := time.Now()
	measured, scheduled := runPanels(t, b, panels, spread, scale)
	t.Logf("%d panels in %v", panels, time.Since(start).Round(time.Millisecond))

	censored := 0
	var over []float64
	for i := range measured {
		if math.IsInf(measured[i], 1) {
			censored++
			continue
		}
		require.GreaterOrEqual(t, measured[i], scheduled[i]*(1-1e-6), "panel %d took less than it slept", i)
		over = append(over, (measured[i]-scheduled[i])*scale*1000)
	}
	require.Less(t, censored, panels/100, "more than 1% of panels ran past panelCap")
	slices.Sort(over)
	t.Logf("overhead per panel: median %.2f ms, p90 %.2f ms, p99 %.2f ms (real time); %d panels censored at %v",
		quantile(over, 0.5), quantile(over, 0.9), quantile(over, 0.99), censored, panelCap)

	m, s := slices.Sorted(slices.Values(measured)), slices.Sorted(slices.Values(scheduled))
	qm, qs := quantiles(m), quantiles(s)
	for i := range levels {
		t.Logf("%s: measured %.1f s, scheduled %.1f s, spec %.1f s (measured %+.1f%% vs spec)",
			levelNames[i], qm[i], qs[i], specQuantiles[i], 100*(qm[i]/specQuantiles[i]-1))
		require.InEpsilon(t, qs[i], qm[i], 0.10, "%s: measured vs scheduled", levelNames[i])
	}
	require.InEpsilon(t, specQuantiles[0], qm[0], 0.10, "p50 vs spec")
	require.InEpsilon(t, specQuantiles[1], qm[1], 0.10, "p90 vs spec")
}

// calibrationConfig is the seed profile with short answers: an answer's
// length does not change a call's latency, and short answers keep the CPU
// cost of the prompts that quote them (round 2, judge, synthesis) low
// enough that a loaded 2-core machine does not queue the calls.
func calibrationConfig(scale float64, seed int64) Config {
	short := EngineProfile{OutputTokensMin: 20, OutputTokensMax: 40}
	engines := map[string]EngineProfile{}
	for _, m := range panelSeats {
		engines[m] = short
	}
	return Config{Profile: ProfileSeed, TimeScale: scale, Seed: seed, Engines: engines}
}

// panelQuestions are open questions, so every stage writes prose.
var panelQuestions = []string{
	"Should the team adopt trunk-based development?",
	"Should we move the ledger to Postgres or keep MySQL?",
	"Is it worth paying for a managed message queue?",
	"Should a five-person startup run its own Kubernetes cluster?",
	"What matters most when planning a database migration?",
}

// panelCap bounds a panel's simulated time in runPanels, so that a rare
// 10-minute straggler cannot stretch a test. Only about 0.2% of panels
// exceed it (TestSeedProfileMonteCarlo's sampler says so), far fewer than
// the 1% above p99, so censoring them leaves p50, p90 and p99 exact.
const panelCap = 350 * time.Second

// runPanels runs n wait-for-all panels through the server's OpenAI
// endpoint with plain net/http, starting them at an even pace over spread
// (open loop, as a load generator would: starting them all at once would
// measure the burst, not the simulator), and returns each panel's measured
// wall time and its scheduled latency, in simulated seconds. A panel that
// runs past panelCap is abandoned and reported as +Inf in both.
func runPanels(tb testing.TB, b *testBundle, n int, spread time.Duration, scale float64) (measured, scheduled []float64) {
	tb.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: 4096}
	tb.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}
	endpoint := b.srv.Endpoint("openai") + "/chat/completions"

	type result struct {
		text string
		ms   float64
		err  error
	}
	callOnce := func(ctx context.Context, model, user string, jsonMode bool) result {
		req := map[string]any{"model": model, "messages": []map[string]string{{"role": "user", "content": user}}}
		if jsonMode {
			req["response_format"] = map[string]string{"type": "json_object"}
		}
		body, _ := json.Marshal(req)
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
		if err != nil {
			return result{err: err}
		}
		hr.Header.Set("Authorization", "Bearer bench")
		hr.Header.Set("Content-Type", "application/json")
		res, err := client.Do(hr)
		if err != nil {
			return result{err: err}
		}
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		if err != nil || res.StatusCode != http.StatusOK {
			return result{err: fmt.Errorf("status %d: %s (%v)", res.StatusCode, raw, err)}
		}
		var out struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(raw, &out); err != nil || len(out.Choices) != 1 {
			return result{err: fmt.Errorf("reading %s: %v", raw, err)}
		}
		ms, err := strconv.ParseFloat(res.Header.Get("X-Sim-Latency-Ms"), 64)
		return result{text: out.Choices[0].Message.Content, ms: ms, err: err}
	}
	// stage calls the models in parallel and waits for all of them.
	stage := func(ctx context.Context, models []string, user string, jsonMode bool) ([]string, float64, error) {
		results := make([]result, len(models))
		var wg sync.WaitGroup
		for i, m := range models {
			wg.Go(func() { results[i] = callOnce(ctx, m, user, jsonMode) })
		}
		wg.Wait()
		texts, slowest := make([]string, len(models)), 0.0
		for i, r := range results {
			if r.err != nil {
				return nil, 0, r.err
			}
			texts[i], slowest = r.text, max(slowest, r.ms)
		}
		return texts, slowest, nil
	}
	withAnswers := func(question string, answers []string, ask string) string {
		var sb strings.Builder
		sb.WriteString("Question: " + question + "\n\n")
		for i, a := range answers {
			sb.WriteString("[Answer " + string(rune('A'+i)) + "]\n" + a + "\n\n")
		}
		sb.WriteString(ask)
		return sb.String()
	}
	panel := func(i int) (float64, float64, error) {
		q := fmt.Sprintf("%s (panel %d)", panelQuestions[i%len(panelQuestions)], i)
		seats := panelSeats[:]
		ctx, cancel := context.WithTimeout(tb.Context(), time.Duration(float64(panelCap)*scale))
		defer cancel()
		begin := time.Now()
		r1, s1, err := stage(ctx, seats, q, false)
		if err != nil {
			return 0, 0, err
		}
		r2, s2, err := stage(ctx, seats, withAnswers(q, r1, "Critique the answers above and give your revised answer."), false)
		if err != nil {
			return 0, 0, err
		}
		_, s3, err := stage(ctx, []string{panelJudge}, withAnswers(q, r2, "Respond with a JSON object scoring each answer."), true)
		if err != nil {
			return 0, 0, err
		}
		_, s4, err := stage(ctx, []string{panelSynthesis}, withAnswers(q, r2, "Write one final answer for the user."), false)
		if err != nil {
			return 0, 0, err
		}
		return time.Since(begin).Seconds() / scale, (s1 + s2 + s3 + s4) / 1000, nil
	}

	measured, scheduled = make([]float64, n), make([]float64, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	begin := time.Now()
	for i := range n {
		time.Sleep(time.Until(begin.Add(spread * time.Duration(i) / time.Duration(n))))
		wg.Go(func() {
			m, s, err := panel(i)
			switch {
			case errors.Is(err, context.DeadlineExceeded):
				m, s = math.Inf(1), math.Inf(1) // censored at panelCap
			case err != nil:
				errs <- fmt.Errorf("panel %d: %w", i, err)
				return
			}
			measured[i], scheduled[i] = m, s
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(tb, err)
	}
	return measured, scheduled
}

// BenchmarkSeedCalibration prints the seed profile's deliberation latency
// beside the spec's: p50_s, p90_s and p99_s from a Monte Carlo of 100,000
// panels drawn from the profile's sampler; http_p50_s… from 2,000 panels of
// real HTTP calls at TimeScale 0.02 (measured wall time, in simulated
// seconds), with http_sched_p50_s… the same panels' scheduled latency.
func BenchmarkSeedCalibration(b *testing.B) {
	var got [3]float64
	seed := uint64(100)
	for b.Loop() {
		seed++
		got = quantiles(monteCarlo(100_000, seed))
	}
	for i, name := range levelNames {
		b.ReportMetric(got[i], name+"_s")
		b.ReportMetric(specQuantiles[i], "spec_"+name+"_s")
	}
	const scale = 0.02
	bundle := setup(b, calibrationConfig(scale, 11))
	measured, scheduled := runPanels(b, bundle, 2000, 7*time.Second, scale)
	slices.Sort(measured)
	slices.Sort(scheduled)
	qm, qs := quantiles(measured), quantiles(scheduled)
	for i, name := range levelNames {
		b.ReportMetric(qm[i], "http_"+name+"_s")
		b.ReportMetric(qs[i], "http_sched_"+name+"_s")
	}
}

// BenchmarkFitSeedProfile is the tool that refits the seed profile's
// constants (see config.go), not a measurement; it runs only when asked:
//
//	go test ./adapters/sim -run '^$' -bench FitSeedProfile -benchtime 1x -sim.fit -v
func BenchmarkFitSeedProfile(b *testing.B) {
	if !*fitFlag {
		b.Skip("a tool, not a measurement: run with -sim.fit to refit the seed profile")
	}
	t := b
	const panels = 400_000
	r := rand.New(rand.NewPCG(20240601, 0))
	u, z := make([]float64, panels*8), make([]float64, panels*8)
	for i := range u {
		u[i], z[i] = r.Float64(), r.NormFloat64()
	}
	latency := func(x []float64) Latency {
		return Latency{
			Median: time.Duration(math.Exp(x[0]) * float64(time.Second)), Sigma: x[1],
			TailWeight: seedTailWeight, TailMedian: time.Duration(math.Exp(x[2]) * float64(time.Second)), TailSigma: seedTailSigma,
			Max: seedMax,
		}
	}
	sample := func(l Latency) []float64 {
		out := make([]float64, panels)
		for p := range out {
			k := p * 8
			out[p] = panelSeconds(func(string) time.Duration { k++; return l.at(u[k-1], z[k-1]) })
		}
		slices.Sort(out)
		return out
	}
	objective := func(x []float64) float64 {
		if x[1] <= 0 {
			return math.Inf(1)
		}
		q, loss := quantiles(sample(latency(x))), 0.0
		for i := range q {
			d := math.Log(q[i] / specQuantiles[i])
			loss += d * d
		}
		return loss
	}
	// Restarting the simplex from its best point keeps it from collapsing
	// early on the step-shaped objective that sample quantiles make.
	x := []float64{math.Log(4), 0.6, math.Log(40)}
	for _, step := range []float64{0.2, 0.1, 0.05, 0.02} {
		x = nelderMead(objective, x, step, 200)
		t.Logf("step %.2f: loss %.3g", step, objective(x))
	}
	l := latency(x)
	q := quantiles(sample(l))
	t.Logf("seedBodyMedian = %d * time.Millisecond", l.Median.Round(time.Millisecond).Milliseconds())
	t.Logf("seedBodySigma  = %.4f", l.Sigma)
	t.Logf("seedTailMedian = %d * time.Millisecond", l.TailMedian.Round(time.Millisecond).Milliseconds())
	t.Logf("fitted panel quantiles: %.2f / %.2f / %.2f s (spec %v)", q[0], q[1], q[2], specQuantiles)
	for i := range q {
		require.InEpsilon(t, specQuantiles[i], q[i], 0.005)
	}
}

// nelderMead minimises f from x0 with the Nelder–Mead simplex method.
func nelderMead(f func([]float64) float64, x0 []float64, step float64, iterations int) []float64 {
	n := len(x0)
	pts := make([][]float64, n+1)
	vals := make([]float64, n+1)
	for i := range pts {
		pts[i] = slices.Clone(x0)
		if i > 0 {
			pts[i][i-1] += step
		}
		vals[i] = f(pts[i])
	}
	along := func(c, p []float64, t float64) []float64 {
		out := make([]float64, n)
		for k := range out {
			out[k] = c[k] + t*(p[k]-c[k])
		}
		return out
	}
	for range iterations {
		idx := []int{}
		for i := range pts {
			idx = append(idx, i)
		}
		slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(vals[a], vals[b]) })
		sortedPts, sortedVals := make([][]float64, n+1), make([]float64, n+1)
		for i, j := range idx {
			sortedPts[i], sortedVals[i] = pts[j], vals[j]
		}
		pts, vals = sortedPts, sortedVals
		if vals[n]-vals[0] < 1e-12 {
			break
		}
		centroid := make([]float64, n)
		for _, p := range pts[:n] {
			for k := range centroid {
				centroid[k] += p[k] / float64(n)
			}
		}
		refl := along(centroid, pts[n], -1)
		fr := f(refl)
		switch {
		case fr < vals[0]:
			exp := along(centroid, pts[n], -2)
			if fe := f(exp); fe < fr {
				pts[n], vals[n] = exp, fe
			} else {
				pts[n], vals[n] = refl, fr
			}
		case fr < vals[n-1]:
			pts[n], vals[n] = refl, fr
		default:
			t := 0.5
			if fr < vals[n] {
				t = -0.5
			}
			contr := along(centroid, pts[n], t)
			if fc := f(contr); fc < min(fr, vals[n]) {
				pts[n], vals[n] = contr, fc
			} else {
				for i := 1; i <= n; i++ {
					pts[i] = along(pts[0], pts[i], 0.5)
					vals[i] = f(pts[i])
				}
			}
		}
	}
	best := 0
	for i := range vals {
		if vals[i] < vals[best] {
			best = i
		}
	}
	return pts[best]
}
