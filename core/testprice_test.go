package core_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// TestStandardFor is the least standard price a test question sold 25% off
// it pays cost with: its test price covers cost, and a micro-dollar less
// would not.
func TestTestStandardFor(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ cost, want core.Micros }{
		{75_000, 100_000},  // exactly three quarters
		{75_001, 100_002},  // 100,001 sells for 75,000
		{99_450, 132_600},  // a plus panel's deep question and its baseline
		{123_825, 165_100}, // the same with three judges three times
		{1, 2},             // 1 sells for 0
		{0, 0},
		{-5, 0},
	} {
		got := core.TestStandardFor(tt.cost)
		require.Equal(t, tt.want, got, "cost %d", tt.cost)
		if tt.cost > 0 {
			require.GreaterOrEqual(t, core.TestQuestionPrice(got), tt.cost, "cost %d", tt.cost)
			require.Less(t, core.TestQuestionPrice(got-1), tt.cost, "cost %d: the least", tt.cost)
		}
	}
	for cost := core.Micros(1); cost < 20_000; cost += 7 {
		p := core.TestStandardFor(cost)
		require.True(t, core.TestQuestionPrice(p) >= cost && core.TestQuestionPrice(p-1) < cost, "cost %d", cost)
	}
}

// A call's rounds: the mode's max_rounds where its critique policy runs
// critique at the question's depth, else one.
func TestDeliberationRounds(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		critique string
		max      int
		depth    core.Depth
		want     int
	}{
		{core.CritiqueAlways, 3, core.DepthLight, 3},
		{core.CritiqueAlways, 3, core.DepthDeep, 3},
		{core.CritiqueDeep, 3, core.DepthMedium, 1},
		{core.CritiqueDeep, 3, core.DepthDeep, 3},
		{core.CritiqueNever, 3, core.DepthDeep, 1},
		{core.CritiqueAlways, 0, core.DepthDeep, 1},
	} {
		d := core.Deliberation{Critique: tt.critique, MaxRounds: tt.max}
		require.Equal(t, tt.want, d.Rounds(tt.depth), "%+v", tt)
	}
}
