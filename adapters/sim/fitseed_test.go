//go:build simfit

package sim

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkFitSeedProfile is the tool that refits the seed profile's
// constants (see config.go), not a measurement: it is built only with the
// simfit tag, so `make bench` never runs it:
//
//	go test -tags simfit ./adapters/sim -run '^$' -bench FitSeedProfile -benchtime 1x -v
func BenchmarkFitSeedProfile(b *testing.B) {
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
