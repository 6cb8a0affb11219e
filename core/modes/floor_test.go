package modes_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/modes"
)

// proPanel is floorSpec's panel as a mode runs it: x/big and y/big at pro,
// each backing the other, a judge on z/big, two rounds on deep questions.
func proPanel() *core.Mode {
	return &core.Mode{Deliberation: core.Deliberation{
		Seats:    map[core.Tier][]core.Seat{core.TierPro: {{Engine: "x/big", Backup: "y/big"}, {Engine: "y/big", Backup: "x/big"}}},
		Staff:    map[string]core.Staff{"judge": {Engine: "z/big"}},
		Critique: core.CritiqueDeep, MaxRounds: 2,
	}}
}

// floorSpec is TestFloor's panel — a pro row of x/big and y/big, each
// backing the other, a judge on z/big, two rounds — with critique on deep
// questions.
func floorSpec() *modes.Spec {
	return &modes.Spec{
		MinTier:   core.TierPro,
		Seats:     []modes.Seat{{Engine: "x/big", Backup: "y/big"}, {Engine: "y/big", Backup: "x/big"}},
		Staff:     map[string]modes.Staff{"judge": {Engine: "z/big"}},
		Critique:  core.CritiqueDeep,
		MaxRounds: 2,
	}
}

// The reference deliberation, worked out by hand: every seat every round
// at the dearer of its engine and backup, the judge every round, the
// other staff once.
func TestReferenceCost(t *testing.T) {
	t.Parallel()
	// On the reference question (1,000 in, 500 out): y/big 1000×15 +
	// 500×75 = 52,500 µ$; x/big 30,000; z/big 6,000; x/cheap 2,000.
	seats := []core.Seat{{Engine: "x/big", Backup: "y/big"}, {Engine: "z/big"}}
	staff := map[string]core.Staff{"judge": {Engine: "z/big"}, "synthesis": {Engine: "x/cheap", Backup: "x/big"}}
	e := engines()
	require.Equal(t, core.Micros(3*(52_500+6_000)+3*6_000+30_000), modes.ReferenceCost(seats, staff, 3, e))
	require.Equal(t, core.Micros(52_500+6_000+6_000+30_000), modes.ReferenceCost(seats, staff, 0, e), "at least a round")
	require.Equal(t, modes.ReferenceCost(seats, staff, core.MaxRounds, e), modes.ReferenceCost(seats, staff, 9, e),
		"at most core.MaxRounds")
	unknown := []core.Seat{{Engine: "nope/none"}, {Engine: "z/big"}}
	require.Equal(t, core.Micros(6_000), modes.ReferenceCost(unknown, nil, 1, e), "an engine the catalogue lacks costs nothing")
}

// A call's standard price: its band's surcharge, the projected token charge
// at its tier over its depth's rounds, and the 5% fee on it.
func TestStandardPrice(t *testing.T) {
	t.Parallel()
	flat := usd("0.20")
	m := proPanel()
	m.Pricing = core.Pricing{SurchargeByDepth: map[core.Depth]core.Micros{core.DepthLight: usd("0.05")}, Surcharge: &flat}
	// Light: one round, 2 × 52,500 + 6,000 = 111,000; fee 5,550.
	p, ok := modes.StandardPrice(m, core.TierPro, core.DepthLight, engines())
	require.True(t, ok)
	require.Equal(t, core.Micros(50_000+111_000+5_550), p)
	// Deep: two rounds, 222,000; fee 11,100; the flat surcharge.
	p, ok = modes.StandardPrice(m, core.TierPro, core.DepthDeep, engines())
	require.True(t, ok)
	require.Equal(t, core.Micros(200_000+222_000+11_100), p)

	m.Pricing.Surcharge = nil
	_, ok = modes.StandardPrice(m, core.TierPro, core.DepthDeep, engines())
	require.False(t, ok, "no price for the band")
}

// The judging a question can buy: each judge's engine, repeats times, on
// the reference question.
func TestJudgingCost(t *testing.T) {
	t.Parallel()
	e := engines()
	require.Equal(t, core.Micros(3*(2_000+6_000)), modes.JudgingCost([]*core.Engine{e["x/cheap"], e["z/big"]}, 3))
	require.Zero(t, modes.JudgingCost(nil, 3))
	require.Zero(t, modes.JudgingCost([]*core.Engine{e["z/big"]}, 0))
}

// TestTestFloor works the test floor of floorSpec out by hand, with judges
// on x/cheap and z/big three times each (24,000 µ$ a question).
func TestTestFloor(t *testing.T) {
	t.Parallel()
	e := engines()
	judging := modes.JudgingCost([]*core.Engine{e["x/cheap"], e["z/big"]}, 3)
	require.Equal(t, core.Micros(24_000), judging)
	// A deep question: two rounds, T = 2 × 52,500 × 2 + 6,000 × 2 =
	// 222,000 (fee 11,100). The baseline is the dearest seated primary,
	// y/big: 52,500. Its test price must pay T + 52,500 + 24,000 =
	// 298,500: a standard price of 298,500 / 0.75 = 398,000, so a
	// surcharge of 398,000 − 222,000 − 11,100 = 164,900 → $0.17. A light
	// question (one round) needs less.
	floor := modes.TestFloor(floorSpec(), e, nil, judging)
	require.Equal(t, "0.17", floor.String())

	// At the floor every band's question at every tier pays its cost; a
	// cent under it, the deep one does not.
	m := proPanel()
	pays := func(surcharge core.Micros, d core.Depth) bool {
		m.Pricing.Surcharge = &surcharge
		standard, ok := modes.StandardPrice(m, core.TierPro, d, e)
		require.True(t, ok)
		dl := m.Deliberation
		tokens := modes.ReferenceCost(dl.Seats[core.TierPro], dl.Staff, dl.Rounds(d), e)
		return core.TestQuestionPrice(standard) >= tokens+52_500+judging
	}
	for _, d := range core.Depths {
		require.True(t, pays(floor, d), "%s at the floor", d)
	}
	require.False(t, pays(floor-usd("0.01"), core.DepthDeep))
	require.True(t, pays(floor-usd("0.01"), core.DepthLight))

	require.Equal(t, "0.14", modes.TestFloor(floorSpec(), e, nil, 0).String(),
		"without judging: the deliberation and the baseline")
	require.Equal(t, "0.01", modes.TestFloor(&modes.Spec{}, e, nil, judging).String(), "no panel, the least floor")
}

// The policy's floor for an organisation's mode is the higher of the panel
// share (Floor) and the test floor, the recommendation never under it; a
// system mode, which no test runs, is held to the panel share alone.
func TestInputFloorPaysTheTestQuestion(t *testing.T) {
	t.Parallel()
	spec := []byte(`{"name": "Acme Pro Panel", "ticker": "PROP", "min_tier": "pro",
		"seats": [{"engine": "x/big", "backup": "y/big"}, {"engine": "y/big", "backup": "x/big"}],
		"staff": {"judge": {"engine": "z/big"}}, "critique": "deep", "max_rounds": 2}`)
	facts := func(floor, recommended string) modes.FloorFacts {
		return modes.FloorFacts{FloorUSD: core.Dollars(usd(floor)), RecommendedUSD: core.Dollars(usd(recommended))}
	}
	req := modes.Request{Spec: spec, Engines: engines(), Author: modes.Author{OrgID: "org_acme", OrgTicker: "ACME"},
		Judging: 24_000}
	in, refusal := modes.NewInput(req)
	require.Nil(t, refusal)
	require.Equal(t, facts("0.17", "0.17"), *in.Floor)

	req.Author = modes.Author{OrgTicker: "CNCL", System: true}
	in, refusal = modes.NewInput(req)
	require.Nil(t, refusal)
	require.Equal(t, facts("0.03", "0.06"), *in.Floor, "Floor's shares: TestFloor's case")
}
