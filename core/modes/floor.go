package modes

import "github.com/conclavehq/conclave/core"

// The reference question a mode is priced on.
const (
	ReferenceTokensIn  = 1000
	ReferenceTokensOut = 500
)

// Floor and recommended shares of the reference cost, in parts per million.
const (
	FloorSharePPM       = 100_000 // 10%
	RecommendedSharePPM = 250_000 // 25%
)

const cent core.Micros = core.MicrosPerUSD / 100

// ReferenceCost is the real cost at the source of one deliberation of the
// reference question (ReferenceTokensIn in and ReferenceTokensOut out per
// engine call) by a row of seats over rounds rounds: every seat every
// round, the judge every round, the other staff once, each seat and role
// priced at the dearer of its engine and backup with core.CallCost. rounds
// counts from 1 to core.MaxRounds. Engines the catalogue lacks cost nothing
// here (a spec naming one is refused anyway).
//
// It is the one projection of a deliberation's tokens that prices a mode:
// Floor prices a spec's panels with it, and StandardPrice a call to a mode
// (which a test run's questions are sold 25% off).
func ReferenceCost(seats []core.Seat, staff map[string]core.Staff, rounds int,
	engines map[string]*core.Engine) core.Micros {
	rounds = min(max(rounds, 1), core.MaxRounds)
	var cost core.Micros
	for _, seat := range seats {
		cost += referenceCall(engines, seat.Engine, seat.Backup) * core.Micros(rounds)
	}
	for role, st := range staff {
		c := referenceCall(engines, st.Engine, st.Backup)
		if role == "judge" {
			c *= core.Micros(rounds)
		}
		cost += c
	}
	return cost
}

// referenceCall is one engine call of the reference question on the dearer
// of the engines ids name.
func referenceCall(engines map[string]*core.Engine, ids ...string) core.Micros {
	var most core.Micros
	for _, id := range ids {
		if e, ok := engines[id]; ok {
			most = max(most, core.CallCost(ReferenceTokensIn, ReferenceTokensOut, e))
		}
	}
	return most
}

// projectedBill is what a call whose engine calls are projected to cost
// tokens at the source, all on the service's keys, bills with surcharge:
// core.ComputeBill's token charge, platform fee and surcharge, uncapped.
func projectedBill(surcharge, tokens core.Micros) core.Micros {
	return core.ComputeBill(core.BillInput{Calls: []core.BilledCall{{RealCost: tokens}}, Surcharge: surcharge}).Billed
}

// StandardPrice is what a panel call to m at tier, classified at depth, is
// projected to bill on the reference question: the mode's surcharge for the
// depth (core.Pricing.DepthPrice), plus the projected token charge —
// ReferenceCost of the tier's row over the rounds a call of that depth
// runs (core.Deliberation.Rounds) — and the platform fee on it at the API
// rate (core.CallFee, core.FeeRate). ok is false when the mode has no price
// for the depth. A test run's question is sold 25% off it
// (core.TestQuestionPrice): the spec's "25% off standard pricing".
func StandardPrice(m *core.Mode, tier core.Tier, depth core.Depth, engines map[string]*core.Engine) (core.Micros, bool) {
	surcharge, ok := m.Pricing.DepthPrice(depth)
	if !ok {
		return 0, false
	}
	d := m.Deliberation
	return projectedBill(surcharge, ReferenceCost(d.Seats[tier], d.Staff, d.Rounds(depth), engines)), true
}

// JudgingCost is the reference cost of the judging one test question buys
// from judges: each judge's engine reading it repeats times, each reading
// one engine call of the reference question (core.CallCost). The
// deployment passes its bench judges' engines at the most repeats a run
// may ask (Deps.Judging).
func JudgingCost(judges []*core.Engine, repeats int) core.Micros {
	var cost core.Micros
	for _, e := range judges {
		cost += core.CallCost(ReferenceTokensIn, ReferenceTokensOut, e)
	}
	return cost * core.Micros(max(repeats, 0))
}

// QuestionCost is the reference cost to the service of one test question of
// m asked at tier and classified at depth, judging aside: its deliberation
// (ReferenceCost of the tier's row over the rounds of the depth) and its
// baseline's answer (one reference call of the dearest engine m seats as a
// primary at any tier — the bound TestFloor uses, punch_up's included).
// ok is false when m has no row at tier.
func QuestionCost(m *core.Mode, tier core.Tier, depth core.Depth, engines map[string]*core.Engine) (core.Micros, bool) {
	seats, ok := m.Deliberation.Seats[tier]
	if !ok {
		return 0, false
	}
	var baseline core.Micros
	for _, row := range m.Deliberation.Seats {
		for _, seat := range row {
			baseline = max(baseline, referenceCall(engines, seat.Engine))
		}
	}
	return ReferenceCost(seats, m.Deliberation.Staff, m.Deliberation.Rounds(depth), engines) + baseline, true
}

// Floor is the lowest price (per-depth or flat surcharge) a mode may charge
// for its panel, and the price recommended to its author. Both are shares
// of the mode's reference cost: one full deliberation of the reference
// question (ReferenceCost, every round of max_rounds) on the mode's
// costliest tier. The floor is FloorSharePPM of it and the recommendation
// RecommendedSharePPM, each rounded up to the cent; the floor is at least
// one cent.
//
// The floor scales with the panel a caller convenes, so that a mode of six
// frontier seats cannot be listed for the price of a mode of three small
// ones; the token charge is billed on top of the surcharge either way. A
// mode an organisation owns is floored higher still where its test
// questions need it (TestFloor; NewInput applies both).
func Floor(s *Spec, engines map[string]*core.Engine, available func(string) bool) (floor, recommended core.Micros) {
	if available == nil {
		available = func(string) bool { return true }
	}
	staff := specStaff(s)
	var ref core.Micros
	for t, row := range s.Rows() {
		seats, err := resolveRow(t, row, s, engines, available)
		if err != nil {
			continue
		}
		ref = max(ref, ReferenceCost(seats, staff, s.MaxRounds, engines))
	}
	floor = max(ceilCent(share(ref, FloorSharePPM)), cent)
	recommended = max(ceilCent(share(ref, RecommendedSharePPM)), floor)
	return floor, recommended
}

// TestFloor is the least price, in whole cents and at least one, at which
// every test question of the mode the spec describes pays what it costs the
// service. A test question is sold 25% off its standard price
// (StandardPrice) and buys, at whichever tier and depth: its deliberation
// (ReferenceCost over the rounds of the depth), the baseline's answer (one
// reference call of the dearest engine the spec seats as a primary, a
// bound on every tier's baseline, punch_up's included) and judging (the
// deployment's bench judges, JudgingCost). With T the deliberation and J
// the baseline and judging, a surcharge S pays them when
// core.TestQuestionPrice(S + T + fee(T)) ≥ T + J: S is at least
// core.TestStandardFor(T + J) − T − fee(T). The floor is one figure for
// every depth, so it is the largest such S over the spec's tiers and
// depths — the deepest question on the dearest row.
func TestFloor(s *Spec, engines map[string]*core.Engine, available func(string) bool, judging core.Micros) core.Micros {
	if available == nil {
		available = func(string) bool { return true }
	}
	staff := specStaff(s)
	rows := map[core.Tier][]core.Seat{}
	var baseline core.Micros
	for t, row := range s.Rows() {
		seats, err := resolveRow(t, row, s, engines, available)
		if err != nil {
			continue
		}
		rows[t] = seats
		for _, seat := range seats {
			baseline = max(baseline, referenceCall(engines, seat.Engine))
		}
	}
	d := core.Deliberation{Critique: s.Critique, MaxRounds: s.MaxRounds}
	var need core.Micros
	for _, seats := range rows {
		for _, depth := range core.Depths {
			tokens := ReferenceCost(seats, staff, d.Rounds(depth), engines)
			need = max(need, core.TestStandardFor(tokens+baseline+max(judging, 0))-projectedBill(0, tokens))
		}
	}
	return max(ceilCent(need), cent)
}

// floors are the floor and recommendation of the spec that the policy
// holds prices to (Input.Floor): Floor, raised to TestFloor for a mode an
// organisation owns — the modes that can be tested (an operator's system
// modes cannot) — and the recommendation never under the floor.
func floors(s *Spec, req Request) (floor, recommended core.Micros) {
	floor, recommended = Floor(s, req.Engines, req.available)
	if !req.Author.System {
		floor = max(floor, TestFloor(s, req.Engines, req.available, req.Judging))
		recommended = max(recommended, floor)
	}
	return floor, recommended
}

// specStaff is the spec's staff as a mode holds it.
func specStaff(s *Spec) map[string]core.Staff {
	staff := make(map[string]core.Staff, len(s.Staff))
	for role, st := range s.Staff {
		staff[role] = core.Staff{Engine: st.Engine, Backup: st.Backup}
	}
	return staff
}

func share(m core.Micros, ppm int64) core.Micros {
	return core.Micros((int64(m)*ppm + 999_999) / 1_000_000)
}

func ceilCent(m core.Micros) core.Micros { return (m + cent - 1) / cent * cent }
