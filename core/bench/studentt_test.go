package bench_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core/bench"
)

// TestTQuantileAgainstTable checks TQuantile against the upper critical
// values of Student's t printed in the NIST/SEMATECH e-Handbook of
// Statistical Methods, §1.3.6.7.2 (three decimals).
func TestTQuantileAgainstTable(t *testing.T) {
	t.Parallel()
	probs := []float64{0.90, 0.95, 0.975, 0.99, 0.995, 0.999}
	table := []struct {
		df   float64
		want []float64
	}{
		// The handbook prints 318.313 for the last; with one degree of freedom
		// t is Cauchy and the quantile is exactly cot(0.001π) = 318.309.
		{1, []float64{3.078, 6.314, 12.706, 31.821, 63.657, 318.309}},
		{2, []float64{1.886, 2.920, 4.303, 6.965, 9.925, 22.327}},
		{3, []float64{1.638, 2.353, 3.182, 4.541, 5.841, 10.215}},
		{5, []float64{1.476, 2.015, 2.571, 3.365, 4.032, 5.893}},
		{10, []float64{1.372, 1.812, 2.228, 2.764, 3.169, 4.144}},
		{20, []float64{1.325, 1.725, 2.086, 2.528, 2.845, 3.552}},
		{30, []float64{1.310, 1.697, 2.042, 2.457, 2.750, 3.385}},
		{60, []float64{1.296, 1.671, 2.000, 2.390, 2.660, 3.232}},
		{100, []float64{1.290, 1.660, 1.984, 2.364, 2.626, 3.174}},
		{math.Inf(1), []float64{1.282, 1.645, 1.960, 2.326, 2.576, 3.090}},
	}
	for _, row := range table {
		for i, p := range probs {
			got := bench.TQuantile(p, row.df)
			require.InDeltaf(t, row.want[i], got, 0.0005, "t(%v, df=%v)", p, row.df)
			require.InDeltaf(t, -row.want[i], bench.TQuantile(1-p, row.df), 0.0005, "t(%v, df=%v)", 1-p, row.df)
		}
	}
}

// TestTQuantileInvertsCDF checks the quantile against the distribution
// function it inverts, at fractional degrees of freedom and the far tails the
// attempt adjustment reaches (one-sided 0.025/20).
func TestTQuantileInvertsCDF(t *testing.T) {
	t.Parallel()
	for _, df := range []float64{0.5, 1, 1.5, 2, 2.5, 4, 7.3, 47, 147, 1e4} {
		for _, p := range []float64{1e-6, 0.001, 0.0125, 0.3, 0.5, 0.7, 0.975, 0.99875, 1 - 1e-6} {
			q := bench.TQuantile(p, df)
			require.InDeltaf(t, p, bench.TCDF(q, df), 1e-9*math.Max(1, p/(1-p)), "df=%v p=%v q=%v", df, p, q)
		}
	}
	require.Equal(t, 0.0, bench.TQuantile(0.5, 3))
	require.InDelta(t, 0.5, bench.TCDF(0, 3), 1e-15)
	for _, bad := range [][2]float64{{0, 5}, {1, 5}, {-0.1, 5}, {0.5, 0}, {0.5, -1}, {math.NaN(), 5}, {0.9, math.NaN()}} {
		require.Truef(t, math.IsNaN(bench.TQuantile(bad[0], bad[1])), "%v", bad)
	}
}
