package modes

import "github.com/conclavehq/conclave/core"

// The reference question the floor is priced on.
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

// Floor is the lowest price (per-depth or flat surcharge) a mode may charge,
// and the price recommended to its author. Both are shares of the mode's
// reference cost: what one full deliberation of the reference question
// (ReferenceTokensIn in, ReferenceTokensOut out per engine call) costs at
// the source on the mode's costliest tier — every seat for every round,
// the judge every round, the other staff once — pricing each seat and role
// at the dearer of its engine and backup, with core.CallCost. The floor is
// FloorSharePPM of it and the recommendation RecommendedSharePPM, each
// rounded up to the cent; the floor is at least one cent. Engines the
// catalogue lacks cost nothing here (the spec is refused for them anyway).
//
// The floor scales with the panel a caller convenes, so that a mode of six
// frontier seats cannot be listed for the price of a mode of three small
// ones; the token charge is billed on top of the surcharge either way.
func Floor(s *Spec, engines map[string]*core.Engine, available func(string) bool) (floor, recommended core.Micros) {
	if available == nil {
		available = func(string) bool { return true }
	}
	rounds := min(max(s.MaxRounds, 1), core.MaxRounds)
	cost := func(ids ...string) core.Micros {
		var most core.Micros
		for _, id := range ids {
			if e, ok := engines[id]; ok {
				most = max(most, core.CallCost(ReferenceTokensIn, ReferenceTokensOut, e))
			}
		}
		return most
	}
	var staff core.Micros
	for role, st := range s.Staff {
		c := cost(st.Engine, st.Backup)
		if role == "judge" {
			c *= core.Micros(rounds)
		}
		staff += c
	}
	var ref core.Micros
	for t, row := range s.Rows() {
		seats, err := resolveRow(t, row, s, engines, available)
		if err != nil {
			continue
		}
		var perRound core.Micros
		for _, seat := range seats {
			perRound += cost(seat.Engine, seat.Backup)
		}
		ref = max(ref, perRound*core.Micros(rounds)+staff)
	}
	floor = max(ceilCent(share(ref, FloorSharePPM)), cent)
	recommended = max(ceilCent(share(ref, RecommendedSharePPM)), floor)
	return floor, recommended
}

func share(m core.Micros, ppm int64) core.Micros {
	return core.Micros((int64(m)*ppm + 999_999) / 1_000_000)
}

func ceilCent(m core.Micros) core.Micros { return (m + cent - 1) / cent * cent }
