// Package modestest is a corpus of mode specs for tests: two valid specs,
// and for every code mode validation refuses a spec with, one spec that
// breaks that rule and no other, with the author, the taken tickers and the
// unavailable engines it is validated against and what its one refusal
// carries (docs/modes.md, "The rules, code by code").
//
// The same corpus serves every test of validation, whatever carries it: the
// policy's (policies), the REST API's and the tool server's. The specs name
// the engines of the built-in catalogue (the sim/ engines of
// internal/config's Builtin); a test loads that catalogue itself, since core
// imports nothing from internal.
package modestest

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/modes"
)

// ValidSpec is a fixed panel at the experience and plus tiers; it passes
// for Acme. It is priced above the floor (modes.TestFloor) of every
// variant the corpus makes of it, with the default configuration's bench
// judges too ($0.19 at most; $0.08 for ValidSpec itself), so that a case
// breaks its own rule and not the floor besides.
const ValidSpec = `{
  "name": "Acme Review Panel",
  "ticker": "PANL",
  "description": "Three seats from three provider families.",
  "use_when": "Trade-offs where a second and a third opinion are worth a few cents.",
  "seats_by_tier": {
    "experience": [
      {"engine": "sim/swift", "backup": "sim/gemini-flash"},
      {"engine": "sim/gemini-flash", "backup": "sim/swift"},
      {"engine": "sim/sonnet", "backup": "sim/swift"}
    ],
    "plus": [
      {"engine": "sim/atlas", "backup": "sim/gemini-flash"},
      {"engine": "sim/sonnet", "backup": "sim/atlas"},
      {"engine": "sim/gemini-flash", "backup": "sim/sonnet"}
    ]
  },
  "staff": {
    "classifier": {"engine": "sim/swift"},
    "judge": {"engine": "sim/sonnet", "backup": "sim/atlas"},
    "synthesis": {"engine": "sim/atlas", "backup": "sim/sonnet"}
  },
  "critique": "deep",
  "max_rounds": 2,
  "quorum": 2,
  "straggler_deadline_s": 20,
  "express_threshold": 0.2,
  "cost_ceiling_usd": 1.5,
  "api_commercial": {
    "price_tier": "standard",
    "q_surcharge_by_depth": {"light": 0.20, "medium": 0.25, "deep": 0.30},
    "q_surcharge_usd": 0.30
  }
}`

// ValidAutoSpec is one row of two auto seats from plus up, drawn from the
// frontier engines of two families at least; it passes for Acme.
const ValidAutoSpec = `{
  "name": "Acme Frontier Draw",
  "ticker": "DRAW",
  "use_when": "Hard questions where two frontier families should disagree.",
  "min_tier": "plus",
  "seats": [{"engine": "auto"}, {"engine": "auto"}],
  "pool": ["sim/atlas-frontier", "sim/opus", "sim/gemini-pro"],
  "family_diversity": 2,
  "staff": {"judge": {"engine": "sim/opus", "backup": "sim/atlas-frontier", "tier": "pro"}},
  "critique": "always",
  "max_rounds": 2,
  "cost_ceiling_usd": 3,
  "api_commercial": {"q_surcharge_usd": 0.40}
}`

// ProRow is a fixed row of the three frontier engines, which reach every
// tier.
const ProRow = `[
  {"engine": "sim/atlas-frontier", "backup": "sim/gemini-pro"},
  {"engine": "sim/opus", "backup": "sim/atlas-frontier"},
  {"engine": "sim/gemini-pro", "backup": "sim/opus"}
]`

// Acme is the organisation that authors the corpus's specs, by default.
// Its ticker is the company part of the taken tickers of ticker_taken's
// case.
var Acme = modes.Author{OrgID: "org_acme", OrgTicker: "ACME"}

// Operator is an operator validating a system mode.
var Operator = modes.Author{OrgTicker: "CNCL", System: true}

// Case is one spec that breaks one rule: validated as Author, with
// TakenTickers taken and the Unavailable engines unavailable, it is
// refused with exactly one refusal, of Code at Path, carrying
// SuggestedTicker (ticker_taken) or FloorUSD and RecommendedUSD
// (price_below_floor) and nothing else beside its message.
type Case struct {
	Code core.Code
	Path string
	Spec json.RawMessage
	// Author is Acme unless the rule needs another: Operator for the system
	// mode rules, an author without an organisation for org_required.
	Author modes.Author
	// TakenTickers are full tickers (OWNR:MODE) of other modes; for
	// ticker_taken, Acme's modes PANL and PANA and the built-in CNCL:STND.
	TakenTickers []string
	// Unavailable are engines that cannot fill a seat now.
	Unavailable []string

	SuggestedTicker string
	// FloorUSD and RecommendedUSD are the dollar figures price_below_floor
	// carries, as core.Micros prints them ("0.01"); "" for other codes.
	FloorUSD, RecommendedUSD string
}

// ByOrganisation reports whether an organisation's own request — an API
// key's or a connected app's, for its organisation — can produce the case.
// Three kinds cannot: the system mode rules (an operator validates system
// modes), org_required (the author has no organisation) and
// engine_unavailable (a request cannot make an engine unavailable; a test
// of a deployment can, by configuring it out).
func (c Case) ByOrganisation() bool {
	return !c.Author.System && c.Author.OrgID != "" && len(c.Unavailable) == 0
}

// Cases returns the corpus, one case per validation code, fresh on every
// call (a test may change what it was given).
func Cases() []Case {
	base := parse(ValidSpec)
	auto := parse(ValidAutoSpec)
	system := base.with(func(s spec) { s.obj("seats_by_tier")["pro"] = value(ProRow) })

	cases := []Case{
		// Seats.
		{Code: core.CodeSixSeatsRequired, Path: "seats_by_tier.experience", Spec: base.raw(func(s spec) {
			s.obj("seats_by_tier")["experience"] = value(`[{"engine": "sim/swift"}, {"engine": "sim/atlas"},
				{"engine": "sim/atlas-frontier"}, {"engine": "sim/sonnet"}, {"engine": "sim/opus"},
				{"engine": "sim/gemini-flash"}, {"engine": "sim/gemini-pro"}]`)
		})},
		{Code: core.CodeDuplicateSeatEngine, Path: "seats_by_tier.plus[2].engine", Spec: base.raw(func(s spec) {
			s.row("seats_by_tier", "plus")[2] = value(`{"engine": "sim/atlas", "backup": "sim/sonnet"}`)
		})},
		{Code: core.CodeSeatEngineNotFound, Path: "seats_by_tier.plus[0].engine", Spec: base.raw(func(s spec) {
			s.seat("seats_by_tier", "plus", 0)["engine"] = "sim/nowhere"
		})},
		{Code: core.CodeSeatEngineAboveTier, Path: "seats_by_tier.plus[0].engine", Spec: base.raw(func(s spec) {
			s.seat("seats_by_tier", "plus", 0)["engine"] = "sim/swift"
		})},
		{Code: core.CodeSingleFamilyRow, Path: "seats_by_tier.plus", Spec: base.raw(func(s spec) {
			s.obj("seats_by_tier")["plus"] = value(`[{"engine": "sim/atlas", "backup": "sim/sonnet"},
				{"engine": "sim/atlas-frontier", "backup": "sim/sonnet"}]`)
		})},
		{Code: core.CodeSeatSelectionRequired, Path: "", Spec: base.raw(func(s spec) { delete(s, "seats_by_tier") })},
		{Code: core.CodeSeatsAmbiguous, Path: "", Spec: base.raw(func(s spec) {
			s["seats"] = s.row("seats_by_tier", "plus")
			s["min_tier"] = "experience"
		})},
		{Code: core.CodeEngineUnavailable, Path: "seats_by_tier.experience[2].engine", Unavailable: []string{"sim/opus"},
			Spec: base.raw(func(s spec) { s.seat("seats_by_tier", "experience", 2)["engine"] = "sim/opus" })},

		// Seat rows by tier.
		{Code: core.CodeSeatsByTierInvalid, Path: "seats_by_tier", Spec: base.raw(func(s spec) { s["seats_by_tier"] = map[string]any{} })},
		{Code: core.CodeSeatTierUnknown, Path: "seats_by_tier.ultra", Spec: base.raw(func(s spec) {
			s.obj("seats_by_tier")["ultra"] = value(ProRow)
		})},
		{Code: core.CodeSeatTiersNotContiguous, Path: "seats_by_tier", Spec: base.raw(func(s spec) {
			delete(s.obj("seats_by_tier"), "plus")
			s.obj("seats_by_tier")["pro"] = value(ProRow)
		})},
		{Code: core.CodeSeatsByTierNeedsFixed, Path: "seats_by_tier", Spec: base.raw(func(s spec) {
			s["seats_by_tier"] = value(`{"plus": [{"engine": "auto"}, {"engine": "auto"}]}`)
			s["pool"] = value(`["sim/atlas-frontier", "sim/opus", "sim/gemini-pro"]`)
		})},
		{Code: core.CodeSeatTiersMinTierMismatch, Path: "min_tier", Spec: base.raw(func(s spec) { s["min_tier"] = "plus" })},
		{Code: core.CodeSeatTiersBelowStaff, Path: "staff.judge.tier", Spec: base.raw(func(s spec) {
			s.obj("staff")["judge"] = value(`{"engine": "sim/opus", "backup": "sim/atlas-frontier", "tier": "pro"}`)
		})},
		{Code: core.CodeTierRequired, Path: "min_tier", Spec: auto.raw(func(s spec) { delete(s, "min_tier") })},

		// Staff.
		{Code: core.CodeStaffRoleUnknown, Path: "staff.critic", Spec: base.raw(func(s spec) {
			s.obj("staff")["critic"] = value(`{"engine": "sim/sonnet"}`)
		})},
		{Code: core.CodeStaffAutoNotAllowed, Path: "staff.classifier.engine", Spec: base.raw(func(s spec) {
			s.obj("staff", "classifier")["engine"] = "auto"
		})},
		{Code: core.CodeStaffTiersShape, Path: "staff.judge.tier", Spec: base.raw(func(s spec) {
			s.obj("staff", "judge")["tier"] = []any{"plus"}
		})},
		{Code: core.CodeStaffTierUnknown, Path: "staff.judge.tier", Spec: base.raw(func(s spec) { s.obj("staff", "judge")["tier"] = "ultra" })},
		{Code: core.CodeStaffTierIsLowest, Path: "staff.judge.tier", Spec: base.raw(func(s spec) {
			s.obj("staff", "judge")["tier"] = "experience"
		})},
		{Code: core.CodeStaffBackupWithoutPrimary, Path: "staff.grounding.engine", Spec: base.raw(func(s spec) {
			s.obj("staff")["grounding"] = value(`{"backup": "sim/atlas"}`)
		})},
		{Code: core.CodeStaffBackupSameAsPrimary, Path: "staff.judge.backup", Spec: base.raw(func(s spec) {
			s.obj("staff", "judge")["backup"] = "sim/sonnet"
		})},
		{Code: core.CodeStaffEngineAboveTier, Path: "staff.judge.engine", Spec: base.raw(func(s spec) {
			s.obj("staff")["judge"] = value(`{"engine": "sim/swift", "backup": "sim/atlas", "tier": "plus"}`)
		})},

		// System modes: an operator's.
		{Code: core.CodeSystemModeSeats, Path: "seats_by_tier.pro", Author: Operator, Spec: system.raw(func(s spec) {
			s.obj("seats_by_tier")["pro"] = value(`[{"engine": "auto"}, {"engine": "auto"}, {"engine": "auto"}]`)
		})},
		{Code: core.CodeSystemModeSeatsUntiered, Path: "seats", Author: Operator, Spec: system.raw(func(s spec) {
			delete(s, "seats_by_tier")
			s["seats"] = value(ProRow)
			s["min_tier"] = "experience"
		})},
		{Code: core.CodeSystemModeTierDropped, Path: "seats_by_tier.pro", Author: Operator, Spec: base.raw(nil)},

		// Auto seats.
		{Code: core.CodeAutoNeedsFixedPool, Path: "pool", Spec: auto.raw(func(s spec) { delete(s, "pool") })},
		{Code: core.CodeAutoSeatsMixed, Path: "seats", Spec: auto.raw(func(s spec) {
			s.row("seats")[1] = value(`{"engine": "sim/opus", "backup": "sim/gemini-pro"}`)
		})},
		{Code: core.CodeAutoRowsDifferByTier, Path: "seats_by_tier", Spec: base.raw(func(s spec) {
			s.obj("seats_by_tier")["plus"] = value(`[{"engine": "auto"}, {"engine": "auto"}, {"engine": "auto"}]`)
			s.obj("seats_by_tier")["pro"] = value(`[{"engine": "auto"}, {"engine": "auto"}]`)
			s["pool"] = value(`["sim/atlas-frontier", "sim/opus", "sim/gemini-pro", "sim/atlas", "sim/sonnet"]`)
		})},
		{Code: core.CodeAutoSeatBackup, Path: "seats[0].backup", Spec: auto.raw(func(s spec) {
			s.row("seats")[0] = value(`{"engine": "auto", "backup": "sim/opus"}`)
		})},
		{Code: core.CodeAutoPickedNeedsBackup, Path: "seats", Spec: auto.raw(func(s spec) {
			s["pool"] = []any{"sim/atlas-frontier", "sim/opus"}
		})},
		{Code: core.CodeFamilyDiversityInvalid, Path: "family_diversity", Spec: auto.raw(func(s spec) { s["family_diversity"] = 3 })},
		{Code: core.CodeFamilyDiversityNeedsAuto, Path: "family_diversity", Spec: base.raw(func(s spec) { s["family_diversity"] = 2 })},

		// Other.
		{Code: core.CodeFidelityRetired, Path: "fidelity", Spec: base.raw(func(s spec) { s["fidelity"] = "high" })},
		{Code: core.CodeFidelityInert, Path: "fidelity", Spec: base.raw(func(s spec) { s["fidelity"] = "standard" })},
		{Code: core.CodeInvalidValue, Path: "max_rounds", Spec: base.raw(func(s spec) { s["max_rounds"] = 9 })},

		// Listing and price.
		{Code: core.CodeDescriptionTooLong, Path: "description", Spec: base.raw(func(s spec) {
			s["description"] = strings.Repeat("a", 281)
		})},
		{Code: core.CodeUseWhenInvalid, Path: "use_when", Spec: base.raw(func(s spec) { s["use_when"] = "   " })},
		{Code: core.CodeUseWhenTooLong, Path: "use_when", Spec: base.raw(func(s spec) { s["use_when"] = strings.Repeat("a", 501) })},
		{Code: core.CodePriceRequired, Path: "api_commercial", Spec: base.raw(func(s spec) {
			s["api_commercial"] = map[string]any{"price_tier": "standard"}
		})},
		{Code: core.CodePriceOverrideNotAllowed, Path: "api_commercial.price_override_acknowledged", Spec: base.raw(func(s spec) {
			s.obj("api_commercial")["price_override_acknowledged"] = true
		})},
		{Code: core.CodeTickerRequired, Path: "ticker", Spec: base.raw(func(s spec) { delete(s, "ticker") })},
		{Code: core.CodeTickerInvalid, Path: "ticker", Spec: base.raw(func(s spec) { s["ticker"] = "ACME:PANL" })},
		{Code: core.CodeOrgRequired, Path: "", Author: modes.Author{}, Spec: base.raw(nil)},
		{Code: core.CodeNameTooShort, Path: "name", Spec: base.raw(func(s spec) { s["name"] = "Ab" })},
		{Code: core.CodeNameTooLong, Path: "name", Spec: base.raw(func(s spec) { s["name"] = strings.Repeat("Acme ", 12) + "X" })},
		{Code: core.CodeNameBadChars, Path: "name", Spec: base.raw(func(s spec) { s["name"] = "Acme <Panel>" })},
		{Code: core.CodeNameEdgePunctuation, Path: "name", Spec: base.raw(func(s spec) { s["name"] = "Acme Panel." })},
		{Code: core.CodeNameReserved, Path: "name", Spec: base.raw(func(s spec) { s["name"] = "The Conclave Panel" })},
		{Code: core.CodeDescriptionBadChars, Path: "description", Spec: base.raw(func(s spec) {
			s["description"] = "Three <b>seats</b>."
		})},
		{Code: core.CodeTickerTaken, Path: "ticker", Spec: base.raw(nil), TakenTickers: []string{"ACME:PANL", "ACME:PANA", "CNCL:STND"},
			SuggestedTicker: "PANB"},
		{Code: core.CodePriceBelowFloor, Path: "api_commercial.q_surcharge_by_depth.light", Spec: base.raw(func(s spec) {
			s.obj("api_commercial", "q_surcharge_by_depth")["light"] = 0.005
		}), FloorUSD: "0.04", RecommendedUSD: "0.04"},
	}
	// Acme authors every case that names no author (org_required's
	// author, with no organisation, is named).
	for i := range cases {
		if cases[i].Author == (modes.Author{}) && cases[i].Code != core.CodeOrgRequired {
			cases[i].Author = Acme
		}
	}
	return cases
}

// CaseOf returns the case of code; ok is false for a code the corpus has no
// case of.
func CaseOf(code core.Code) (c Case, ok bool) {
	cases := Cases()
	i := slices.IndexFunc(cases, func(c Case) bool { return c.Code == code })
	if i < 0 {
		return Case{}, false
	}
	return cases[i], true
}

// spec is a JSON object built from a literal, so each case can change it.
type spec map[string]any

// parse reads a literal of this file; the corpus is fixed, so a literal
// that does not parse is a bug here, not an error to return.
func parse(s string) spec {
	var m spec
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic("modestest: " + err.Error())
	}
	return m
}

func value(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic("modestest: " + err.Error())
	}
	return v
}

// with returns a deep copy of s changed by fn (nil: unchanged).
func (s spec) with(fn func(s spec)) spec {
	b, err := json.Marshal(s)
	if err != nil {
		panic("modestest: " + err.Error())
	}
	c := parse(string(b))
	if fn != nil {
		fn(c)
	}
	return c
}

// raw is the JSON of a copy of s changed by fn (nil: unchanged).
func (s spec) raw(fn func(s spec)) json.RawMessage {
	b, err := json.Marshal(s.with(fn))
	if err != nil {
		panic("modestest: " + err.Error())
	}
	return b
}

func (s spec) obj(path ...string) map[string]any {
	m := map[string]any(s)
	for _, p := range path {
		m = m[p].(map[string]any)
	}
	return m
}

func (s spec) row(path ...string) []any {
	last := path[len(path)-1]
	return s.obj(path[:len(path)-1]...)[last].([]any)
}

func (s spec) seat(obj, tier string, i int) map[string]any {
	return s.row(obj, tier)[i].(map[string]any)
}
