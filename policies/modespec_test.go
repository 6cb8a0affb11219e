package policies_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/modes"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/policies"
)

// modeValidator is one validator over the embedded policies, shared.
var modeValidator = sync.OnceValues(func() (*policies.ModeValidator, error) {
	return policies.NewModeValidator(context.Background(), policies.Config{})
})

// builtin is the built-in catalogue: the simulated engines and the two
// system modes.
var builtin = sync.OnceValues(func() (*core.Catalog, error) {
	c, err := config.Builtin()
	if err != nil {
		return nil, err
	}
	return c.Catalog()
})

type specBundle struct {
	validator *policies.ModeValidator
	catalog   *core.Catalog
}

func setupSpec(t *testing.T) *specBundle {
	t.Helper()
	v, err := modeValidator()
	require.NoError(t, err)
	cat, err := builtin()
	require.NoError(t, err)
	return &specBundle{validator: v, catalog: cat}
}

// acme authors the specs of these tests.
var acme = modes.Author{OrgID: "org_acme", OrgTicker: "ACME"}

// spec is a JSON object built from a literal, so each case can change it.
type spec map[string]any

func parse(t *testing.T, s string) spec {
	t.Helper()
	var m spec
	require.NoError(t, json.Unmarshal([]byte(s), &m))
	return m
}

// with returns a deep copy of s changed by fn.
func (s spec) with(t *testing.T, fn func(s spec)) spec {
	t.Helper()
	b, err := json.Marshal(s)
	require.NoError(t, err)
	c := parse(t, string(b))
	fn(c)
	return c
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

// validSpec is a fixed panel at the experience and plus tiers, priced like
// the built-in standard mode.
const validSpec = `{
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
    "q_surcharge_by_depth": {"light": 0.05, "medium": 0.10, "deep": 0.15},
    "q_surcharge_usd": 0.15
  }
}`

// validAutoSpec is one row of two auto seats from plus up, drawn from the
// frontier engines of two families at least.
const validAutoSpec = `{
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

// proRow is a fixed row of the three frontier engines.
const proRow = `[
  {"engine": "sim/atlas-frontier", "backup": "sim/gemini-pro"},
  {"engine": "sim/opus", "backup": "sim/atlas-frontier"},
  {"engine": "sim/gemini-pro", "backup": "sim/opus"}
]`

func jsonValue(t *testing.T, s string) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(s), &v))
	return v
}

type validation struct {
	refusals []modes.Refusal
	mode     *core.Mode
}

func (b *specBundle) validate(t *testing.T, s spec, author modes.Author, taken []string, unavailable ...string) validation {
	t.Helper()
	raw, err := json.Marshal(s)
	require.NoError(t, err)
	rs, m, err := modes.Validate(context.Background(), b.validator, modes.Request{
		Spec:         raw,
		Engines:      b.catalog.Engines(),
		Available:    func(id string) bool { return !slices.Contains(unavailable, id) },
		Author:       author,
		TakenTickers: taken,
	})
	require.NoError(t, err)
	return validation{refusals: rs, mode: m}
}

func codes(rs []modes.Refusal) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r.Code)
	}
	return out
}

// validationCodes are the codes of the spec's validation paragraph and the
// name, ticker, description and price codes of the tool server's table: the
// codes a spec can be refused with.
var validationCodes = []core.Code{
	// seats
	core.CodeSixSeatsRequired, core.CodeDuplicateSeatEngine, core.CodeSeatEngineNotFound, core.CodeSeatEngineAboveTier,
	core.CodeSingleFamilyRow, core.CodeSeatSelectionRequired, core.CodeSeatsAmbiguous, core.CodeEngineUnavailable,
	// seat rows by tier
	core.CodeSeatsByTierInvalid, core.CodeSeatTierUnknown, core.CodeSeatTiersNotContiguous, core.CodeSeatsByTierNeedsFixed,
	core.CodeSeatTiersMinTierMismatch, core.CodeSeatTiersBelowStaff, core.CodeTierRequired,
	// staff
	core.CodeStaffRoleUnknown, core.CodeStaffAutoNotAllowed, core.CodeStaffTiersShape, core.CodeStaffTierUnknown,
	core.CodeStaffTierIsLowest, core.CodeStaffBackupWithoutPrimary, core.CodeStaffBackupSameAsPrimary, core.CodeStaffEngineAboveTier,
	// system modes
	core.CodeSystemModeSeats, core.CodeSystemModeSeatsUntiered, core.CodeSystemModeTierDropped,
	// auto seats
	core.CodeAutoNeedsFixedPool, core.CodeAutoSeatsMixed, core.CodeAutoRowsDifferByTier, core.CodeAutoSeatBackup,
	core.CodeAutoPickedNeedsBackup, core.CodeFamilyDiversityInvalid, core.CodeFamilyDiversityNeedsAuto,
	// other
	core.CodeFidelityRetired, core.CodeFidelityInert, core.CodeInvalidValue,
	// listing and price
	core.CodeDescriptionTooLong, core.CodeUseWhenInvalid, core.CodeUseWhenTooLong, core.CodePriceRequired,
	core.CodePriceOverrideNotAllowed, core.CodeTickerRequired, core.CodeTickerInvalid, core.CodeOrgRequired,
	// the tool server's name, ticker, description and price codes
	core.CodeNameTooShort, core.CodeNameTooLong, core.CodeNameBadChars, core.CodeNameEdgePunctuation, core.CodeNameReserved,
	core.CodeDescriptionBadChars, core.CodeTickerTaken, core.CodePriceBelowFloor,
}

// TestEveryValidationCodeAlone reaches every validation code with a spec
// that breaks that rule and no other: the refusal list is exactly one
// refusal, of that code, at the path named, with the extra fields the spec
// names.
func TestEveryValidationCodeAlone(t *testing.T) {
	t.Parallel()
	b := setupSpec(t)
	base := parse(t, validSpec)
	auto := parse(t, validAutoSpec)
	system := base.with(t, func(s spec) { s.obj("seats_by_tier")["pro"] = jsonValue(t, proRow) })
	operator := modes.Author{OrgTicker: "CNCL", System: true}

	type tc struct {
		code        core.Code
		path        string
		spec        spec
		author      *modes.Author
		taken       []string
		unavailable []string
		check       func(t *testing.T, r modes.Refusal)
	}
	cases := []tc{
		// Seats.
		{code: core.CodeSixSeatsRequired, path: "seats_by_tier.experience", spec: base.with(t, func(s spec) {
			s.obj("seats_by_tier")["experience"] = jsonValue(t, `[{"engine": "sim/swift"}, {"engine": "sim/atlas"},
				{"engine": "sim/atlas-frontier"}, {"engine": "sim/sonnet"}, {"engine": "sim/opus"},
				{"engine": "sim/gemini-flash"}, {"engine": "sim/gemini-pro"}]`)
		})},
		{code: core.CodeDuplicateSeatEngine, path: "seats_by_tier.plus[2].engine", spec: base.with(t, func(s spec) {
			s.row("seats_by_tier", "plus")[2] = jsonValue(t, `{"engine": "sim/atlas", "backup": "sim/sonnet"}`)
		})},
		{code: core.CodeSeatEngineNotFound, path: "seats_by_tier.plus[0].engine", spec: base.with(t, func(s spec) {
			s.row("seats_by_tier", "plus")[0].(map[string]any)["engine"] = "sim/nowhere"
		})},
		{code: core.CodeSeatEngineAboveTier, path: "seats_by_tier.plus[0].engine", spec: base.with(t, func(s spec) {
			s.row("seats_by_tier", "plus")[0].(map[string]any)["engine"] = "sim/swift"
		})},
		{code: core.CodeSingleFamilyRow, path: "seats_by_tier.plus", spec: base.with(t, func(s spec) {
			s.obj("seats_by_tier")["plus"] = jsonValue(t, `[{"engine": "sim/atlas", "backup": "sim/sonnet"},
				{"engine": "sim/atlas-frontier", "backup": "sim/sonnet"}]`)
		})},
		{code: core.CodeSeatSelectionRequired, path: "", spec: base.with(t, func(s spec) { delete(s, "seats_by_tier") })},
		{code: core.CodeSeatsAmbiguous, path: "", spec: base.with(t, func(s spec) {
			s["seats"] = s.row("seats_by_tier", "plus")
			s["min_tier"] = "experience"
		})},
		{code: core.CodeEngineUnavailable, path: "seats_by_tier.experience[2].engine", unavailable: []string{"sim/opus"},
			spec: base.with(t, func(s spec) { s.row("seats_by_tier", "experience")[2].(map[string]any)["engine"] = "sim/opus" })},

		// Seat rows by tier.
		{code: core.CodeSeatsByTierInvalid, path: "seats_by_tier", spec: base.with(t, func(s spec) { s["seats_by_tier"] = map[string]any{} })},
		{code: core.CodeSeatTierUnknown, path: "seats_by_tier.ultra", spec: base.with(t, func(s spec) {
			s.obj("seats_by_tier")["ultra"] = jsonValue(t, proRow)
		})},
		{code: core.CodeSeatTiersNotContiguous, path: "seats_by_tier", spec: base.with(t, func(s spec) {
			delete(s.obj("seats_by_tier"), "plus")
			s.obj("seats_by_tier")["pro"] = jsonValue(t, proRow)
		})},
		{code: core.CodeSeatsByTierNeedsFixed, path: "seats_by_tier", spec: base.with(t, func(s spec) {
			s["seats_by_tier"] = jsonValue(t, `{"plus": [{"engine": "auto"}, {"engine": "auto"}]}`)
			s["pool"] = jsonValue(t, `["sim/atlas-frontier", "sim/opus", "sim/gemini-pro"]`)
		})},
		{code: core.CodeSeatTiersMinTierMismatch, path: "min_tier", spec: base.with(t, func(s spec) { s["min_tier"] = "plus" })},
		{code: core.CodeSeatTiersBelowStaff, path: "staff.judge.tier", spec: base.with(t, func(s spec) {
			s.obj("staff")["judge"] = jsonValue(t, `{"engine": "sim/opus", "backup": "sim/atlas-frontier", "tier": "pro"}`)
		})},
		{code: core.CodeTierRequired, path: "min_tier", spec: auto.with(t, func(s spec) { delete(s, "min_tier") })},

		// Staff.
		{code: core.CodeStaffRoleUnknown, path: "staff.critic", spec: base.with(t, func(s spec) {
			s.obj("staff")["critic"] = jsonValue(t, `{"engine": "sim/sonnet"}`)
		})},
		{code: core.CodeStaffAutoNotAllowed, path: "staff.classifier.engine", spec: base.with(t, func(s spec) {
			s.obj("staff", "classifier")["engine"] = "auto"
		})},
		{code: core.CodeStaffTiersShape, path: "staff.judge.tier", spec: base.with(t, func(s spec) {
			s.obj("staff", "judge")["tier"] = []any{"plus"}
		})},
		{code: core.CodeStaffTierUnknown, path: "staff.judge.tier", spec: base.with(t, func(s spec) { s.obj("staff", "judge")["tier"] = "ultra" })},
		{code: core.CodeStaffTierIsLowest, path: "staff.judge.tier", spec: base.with(t, func(s spec) {
			s.obj("staff", "judge")["tier"] = "experience"
		})},
		{code: core.CodeStaffBackupWithoutPrimary, path: "staff.grounding.engine", spec: base.with(t, func(s spec) {
			s.obj("staff")["grounding"] = jsonValue(t, `{"backup": "sim/atlas"}`)
		})},
		{code: core.CodeStaffBackupSameAsPrimary, path: "staff.judge.backup", spec: base.with(t, func(s spec) {
			s.obj("staff", "judge")["backup"] = "sim/sonnet"
		})},
		{code: core.CodeStaffEngineAboveTier, path: "staff.judge.engine", spec: base.with(t, func(s spec) {
			s.obj("staff")["judge"] = jsonValue(t, `{"engine": "sim/swift", "backup": "sim/atlas", "tier": "plus"}`)
		})},

		// System modes.
		{code: core.CodeSystemModeSeats, path: "seats_by_tier.pro", author: &operator, spec: system.with(t, func(s spec) {
			s.obj("seats_by_tier")["pro"] = jsonValue(t, `[{"engine": "auto"}, {"engine": "auto"}, {"engine": "auto"}]`)
		})},
		{code: core.CodeSystemModeSeatsUntiered, path: "seats", author: &operator, spec: system.with(t, func(s spec) {
			delete(s, "seats_by_tier")
			s["seats"] = jsonValue(t, proRow)
			s["min_tier"] = "experience"
		})},
		{code: core.CodeSystemModeTierDropped, path: "seats_by_tier.pro", author: &operator, spec: base},

		// Auto seats.
		{code: core.CodeAutoNeedsFixedPool, path: "pool", spec: auto.with(t, func(s spec) { delete(s, "pool") })},
		{code: core.CodeAutoSeatsMixed, path: "seats", spec: auto.with(t, func(s spec) {
			s["seats"].([]any)[1] = jsonValue(t, `{"engine": "sim/opus", "backup": "sim/gemini-pro"}`)
		})},
		{code: core.CodeAutoRowsDifferByTier, path: "seats_by_tier", spec: base.with(t, func(s spec) {
			s.obj("seats_by_tier")["plus"] = jsonValue(t, `[{"engine": "auto"}, {"engine": "auto"}, {"engine": "auto"}]`)
			s.obj("seats_by_tier")["pro"] = jsonValue(t, `[{"engine": "auto"}, {"engine": "auto"}]`)
			s["pool"] = jsonValue(t, `["sim/atlas-frontier", "sim/opus", "sim/gemini-pro", "sim/atlas", "sim/sonnet"]`)
		})},
		{code: core.CodeAutoSeatBackup, path: "seats[0].backup", spec: auto.with(t, func(s spec) {
			s["seats"].([]any)[0] = jsonValue(t, `{"engine": "auto", "backup": "sim/opus"}`)
		})},
		{code: core.CodeAutoPickedNeedsBackup, path: "seats", spec: auto.with(t, func(s spec) {
			s["pool"] = []any{"sim/atlas-frontier", "sim/opus"}
		})},
		{code: core.CodeFamilyDiversityInvalid, path: "family_diversity", spec: auto.with(t, func(s spec) { s["family_diversity"] = 3 })},
		{code: core.CodeFamilyDiversityNeedsAuto, path: "family_diversity", spec: base.with(t, func(s spec) { s["family_diversity"] = 2 })},

		// Other.
		{code: core.CodeFidelityRetired, path: "fidelity", spec: base.with(t, func(s spec) { s["fidelity"] = "high" })},
		{code: core.CodeFidelityInert, path: "fidelity", spec: base.with(t, func(s spec) { s["fidelity"] = "standard" })},
		{code: core.CodeInvalidValue, path: "max_rounds", spec: base.with(t, func(s spec) { s["max_rounds"] = 9 })},

		// Listing and price.
		{code: core.CodeDescriptionTooLong, path: "description", spec: base.with(t, func(s spec) {
			s["description"] = strings.Repeat("a", 281)
		})},
		{code: core.CodeUseWhenInvalid, path: "use_when", spec: base.with(t, func(s spec) { s["use_when"] = "   " })},
		{code: core.CodeUseWhenTooLong, path: "use_when", spec: base.with(t, func(s spec) { s["use_when"] = strings.Repeat("a", 501) })},
		{code: core.CodePriceRequired, path: "api_commercial", spec: base.with(t, func(s spec) {
			s["api_commercial"] = map[string]any{"price_tier": "standard"}
		})},
		{code: core.CodePriceOverrideNotAllowed, path: "api_commercial.price_override_acknowledged", spec: base.with(t, func(s spec) {
			s.obj("api_commercial")["price_override_acknowledged"] = true
		})},
		{code: core.CodeTickerRequired, path: "ticker", spec: base.with(t, func(s spec) { delete(s, "ticker") })},
		{code: core.CodeTickerInvalid, path: "ticker", spec: base.with(t, func(s spec) { s["ticker"] = "ACME:PANL" })},
		{code: core.CodeOrgRequired, path: "", author: &modes.Author{}, spec: base},
		{code: core.CodeNameTooShort, path: "name", spec: base.with(t, func(s spec) { s["name"] = "Ab" })},
		{code: core.CodeNameTooLong, path: "name", spec: base.with(t, func(s spec) { s["name"] = strings.Repeat("Acme ", 12) + "X" })},
		{code: core.CodeNameBadChars, path: "name", spec: base.with(t, func(s spec) { s["name"] = "Acme <Panel>" })},
		{code: core.CodeNameEdgePunctuation, path: "name", spec: base.with(t, func(s spec) { s["name"] = "Acme Panel." })},
		{code: core.CodeNameReserved, path: "name", spec: base.with(t, func(s spec) { s["name"] = "The Conclave Panel" })},
		{code: core.CodeDescriptionBadChars, path: "description", spec: base.with(t, func(s spec) {
			s["description"] = "Three <b>seats</b>."
		})},
		{code: core.CodeTickerTaken, path: "ticker", spec: base, taken: []string{"ACME:PANL", "ACME:PANA", "CNCL:STND"},
			check: func(t *testing.T, r modes.Refusal) { require.Equal(t, "PANB", r.SuggestedTicker) }},
		{code: core.CodePriceBelowFloor, path: "api_commercial.q_surcharge_by_depth.light", spec: base.with(t, func(s spec) {
			s.obj("api_commercial", "q_surcharge_by_depth")["light"] = 0.005
		}), check: func(t *testing.T, r modes.Refusal) {
			require.NotNil(t, r.FloorUSD)
			require.NotNil(t, r.RecommendedUSD)
			require.Equal(t, "0.01", core.Micros(*r.FloorUSD).String())
			require.Equal(t, "0.03", core.Micros(*r.RecommendedUSD).String())
		}},
	}

	var covered []core.Code
	for _, c := range cases {
		covered = append(covered, c.code)
	}
	require.ElementsMatch(t, validationCodes, covered, "every validation code has exactly one case")

	for _, c := range cases {
		t.Run(string(c.code), func(t *testing.T) {
			t.Parallel()
			author := acme
			if c.author != nil {
				author = *c.author
			}
			got := b.validate(t, c.spec, author, c.taken, c.unavailable...)
			require.Equal(t, []string{string(c.code)}, codes(got.refusals), "refusals: %+v", got.refusals)
			r := got.refusals[0]
			require.Equal(t, c.path, r.Path)
			require.NotEmpty(t, r.Message)
			require.Equal(t, 400, core.InfoFor(r.Code).Status/100*100, "a validation code is a 4xx")
			if c.check != nil {
				c.check(t, r)
			}
			if r.Code != core.CodeTickerTaken {
				require.Empty(t, r.SuggestedTicker)
			}
			if r.Code != core.CodePriceBelowFloor {
				require.Nil(t, r.FloorUSD)
			}
			require.Nil(t, got.mode, "a refused spec gives no mode")
		})
	}
}

// TestValidSpecs: the fixtures pass, and each converts to a mode that the
// core check accepts.
func TestValidSpecs(t *testing.T) {
	t.Parallel()
	b := setupSpec(t)
	base := parse(t, validSpec)

	got := b.validate(t, base, acme, []string{"CNCL:STND", "CNCL:MAXX"})
	require.Empty(t, got.refusals)
	require.NotNil(t, got.mode)
	require.Equal(t, "ACME:PANL", got.mode.Ticker)
	require.Equal(t, "acme-panl", got.mode.ID)
	require.Equal(t, "org_acme", got.mode.OwnerOrg)
	require.Equal(t, []core.Tier{core.TierExperience, core.TierPlus}, tiersOf(got.mode))

	got = b.validate(t, parse(t, validAutoSpec), acme, nil)
	require.Empty(t, got.refusals)
	require.NotNil(t, got.mode)
	require.Equal(t, []core.Tier{core.TierPlus, core.TierPro}, tiersOf(got.mode))
	// Two families at least, each seat with a backup from the pool.
	pro := got.mode.Deliberation.Seats[core.TierPro]
	require.Equal(t, []core.Seat{
		{Engine: "sim/atlas-frontier", Backup: "sim/gemini-pro"},
		{Engine: "sim/opus", Backup: "sim/gemini-pro"},
	}, pro)

	system := base.with(t, func(s spec) { s.obj("seats_by_tier")["pro"] = jsonValue(t, proRow) })
	got = b.validate(t, system, modes.Author{OrgTicker: "CNCL", System: true}, nil)
	require.Empty(t, got.refusals)
	require.Empty(t, got.mode.OwnerOrg)
}

func tiersOf(m *core.Mode) []core.Tier {
	var out []core.Tier
	for _, t := range core.Tiers {
		if _, ok := m.Deliberation.Seats[t]; ok {
			out = append(out, t)
		}
	}
	return out
}

// TestEveryRefusalAtOnce: a spec that breaks many rules gets them all in one
// answer, price_override_not_allowed first and the rest by path.
func TestEveryRefusalAtOnce(t *testing.T) {
	t.Parallel()
	b := setupSpec(t)
	s := parse(t, validSpec).with(t, func(s spec) {
		s["name"] = "X"
		s["ticker"] = "pnl"
		s["max_rounds"] = 0
		s.obj("api_commercial")["price_override_acknowledged"] = true
		s.obj("staff", "judge")["backup"] = "sim/sonnet"
	})
	got := b.validate(t, s, acme, nil)
	require.Equal(t, []string{
		"price_override_not_allowed", // first, whatever its path
		"invalid_value",              // max_rounds
		"name_too_short",             // name
		"staff_backup_same_as_primary",
		"ticker_invalid",
	}, codes(got.refusals))
	// The same spec gives the same list every time.
	again := b.validate(t, s, acme, nil)
	require.Equal(t, got.refusals, again.refusals)
}

// TestSpecNotAnObject is answered in Go, before any rule runs.
func TestSpecNotAnObject(t *testing.T) {
	t.Parallel()
	b := setupSpec(t)
	for _, raw := range []string{`[]`, `"mode"`, `{"name": `, `{} {}`} {
		rs, m, err := modes.Validate(context.Background(), b.validator, modes.Request{Spec: []byte(raw), Engines: b.catalog.Engines(), Author: acme})
		require.NoError(t, err)
		require.Nil(t, m)
		require.Equal(t, []string{"invalid_value"}, codes(rs), raw)
		require.Empty(t, rs[0].Path)
	}
}

// TestStandardAsSpec writes the built-in conclave-standard as a spec and
// checks that it passes as a system mode and converts to a mode with the
// configured mode's mode_config_hash: the spec can say everything a
// configured mode says.
func TestStandardAsSpec(t *testing.T) {
	t.Parallel()
	b := setupSpec(t)
	standard := parse(t, validSpec).with(t, func(s spec) {
		s["name"] = "Standard"
		s["ticker"] = "STND"
		s.obj("seats_by_tier")["pro"] = jsonValue(t, proRow)
	})
	got := b.validate(t, standard, modes.Author{OrgTicker: "CNCL", System: true}, nil)
	require.Empty(t, got.refusals)

	configured, ok := b.catalog.Resolve("conclave-standard")
	require.True(t, ok)
	require.Equal(t, "CNCL:STND", got.mode.Ticker)
	require.Equal(t, configured.Deliberation, got.mode.Deliberation)
	require.Equal(t, configured.Pricing, got.mode.Pricing)
	require.Equal(t, b.catalog.ConfigHash(configured), got.mode.ConfigHash(b.catalog.Engines()))
}

// TestMaxAsSpec does the same for conclave-max: one frontier row at every
// tier, critique always, a flat price.
func TestMaxAsSpec(t *testing.T) {
	t.Parallel()
	b := setupSpec(t)
	maxSpec := parse(t, `{
	  "name": "Max",
	  "ticker": "MAXX",
	  "use_when": "High-stakes questions where the strongest engines should argue it out before you act.",
	  "staff": {
	    "classifier": {"engine": "sim/swift"},
	    "judge": {"engine": "sim/opus", "backup": "sim/atlas-frontier"},
	    "synthesis": {"engine": "sim/atlas-frontier", "backup": "sim/opus"}
	  },
	  "critique": "always",
	  "max_rounds": 3,
	  "quorum": 0,
	  "straggler_deadline_s": 45,
	  "express_threshold": 0,
	  "cost_ceiling_usd": 4.00,
	  "api_commercial": {"price_tier": "premium", "q_surcharge_usd": 0.32}
	}`).with(t, func(s spec) {
		s["seats_by_tier"] = map[string]any{
			"experience": jsonValue(t, proRow), "plus": jsonValue(t, proRow), "pro": jsonValue(t, proRow),
		}
	})
	got := b.validate(t, maxSpec, modes.Author{OrgTicker: "CNCL", System: true}, nil)
	require.Empty(t, got.refusals)

	configured, ok := b.catalog.Resolve("conclave-max")
	require.True(t, ok)
	require.Equal(t, configured.Deliberation, got.mode.Deliberation)
	require.Equal(t, configured.Pricing, got.mode.Pricing)
	require.Equal(t, b.catalog.ConfigHash(configured), got.mode.ConfigHash(b.catalog.Engines()))
}

// BenchmarkValidate is one validation of the valid spec: input, policy,
// decode and conversion.
func BenchmarkValidate(b *testing.B) {
	v, err := modeValidator()
	require.NoError(b, err)
	cat, err := builtin()
	require.NoError(b, err)
	req := modes.Request{Spec: []byte(validSpec), Engines: cat.Engines(), Author: acme}
	ctx := context.Background()
	for b.Loop() {
		rs, m, err := modes.Validate(ctx, v, req)
		if err != nil || len(rs) > 0 || m == nil {
			b.Fatalf("validate: %v %v", rs, err)
		}
	}
}

// TestPolicyDirTightensARule is the policy author's workflow: a directory
// holding the policies with one rule tightened, loaded the way
// `conclave serve --policy-dir` loads it, refuses what the embedded set
// accepts — without a rebuild.
func TestPolicyDirTightensARule(t *testing.T) {
	t.Parallel()
	b := setupSpec(t)
	s := parse(t, validSpec) // named "Acme Review Panel"
	require.Empty(t, b.validate(t, s, acme, nil).refusals)

	dir := t.TempDir()
	err := fs.WalkDir(policies.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, "_test.rego") {
			return err
		}
		src, err := fs.ReadFile(policies.FS, p)
		if err != nil {
			return err
		}
		if p == "modespec.rego" {
			const from = `reserved_words := {"conclave"}`
			require.Contains(t, string(src), from)
			src = []byte(strings.Replace(string(src), from, `reserved_words := {"conclave", "acme"}`, 1))
		}
		return os.WriteFile(filepath.Join(dir, p), src, 0o644)
	})
	require.NoError(t, err)

	ctx := context.Background()
	// The same directory still serves the authorization decision.
	_, err = policies.New(ctx, policies.Config{Dir: dir})
	require.NoError(t, err)
	tightened, err := policies.NewModeValidator(ctx, policies.Config{Dir: dir})
	require.NoError(t, err)

	raw, err := json.Marshal(s)
	require.NoError(t, err)
	rs, m, err := modes.Validate(ctx, tightened, modes.Request{Spec: raw, Engines: b.catalog.Engines(), Author: acme})
	require.NoError(t, err)
	require.Nil(t, m)
	require.Equal(t, []string{"name_reserved"}, codes(rs))
	require.Equal(t, "name", rs[0].Path)
}

// TestModeValidatorNeedsTheModeRules: a policy directory without the mode
// rules cannot validate specs, and says which package it lacks.
func TestModeValidatorNeedsTheModeRules(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, err := fs.ReadFile(policies.FS, "authz.rego")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "authz.rego"), src, 0o644))
	_, err = policies.NewModeValidator(context.Background(), policies.Config{Dir: dir})
	require.ErrorContains(t, err, "conclave.modespec")
}

// TestModeValidatorFailsClosed: a rule that answers a code core does not
// know is an error, not a refusal nobody can render.
func TestModeValidatorFailsClosed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	policy := "package conclave.modespec\n\nrefusals contains {\"code\": \"made_up\", \"message\": \"no\", \"path\": \"\"} if input.spec.name == \"X\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "modespec.rego"), []byte(policy), 0o644))
	v, err := policies.NewModeValidator(context.Background(), policies.Config{Dir: dir})
	require.NoError(t, err)
	_, _, err = modes.Validate(context.Background(), v, modes.Request{Spec: []byte(`{"name": "X"}`), Author: acme})
	require.ErrorContains(t, err, "made_up")
}

// TestReplacedPolicyBackstop: a replaced policy that accepts everything
// still cannot let through a spec the engine cannot run — core.CheckMode
// refuses it, with the field.
func TestReplacedPolicyBackstop(t *testing.T) {
	t.Parallel()
	b := setupSpec(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "modespec.rego"), []byte("package conclave.modespec\n\nrefusals := set()\n"), 0o644))
	lax, err := policies.NewModeValidator(context.Background(), policies.Config{Dir: dir})
	require.NoError(t, err)

	s := parse(t, validSpec).with(t, func(s spec) { s.row("seats_by_tier", "plus")[0].(map[string]any)["engine"] = "sim/nowhere" })
	raw, err := json.Marshal(s)
	require.NoError(t, err)
	rs, m, err := modes.Validate(context.Background(), lax, modes.Request{Spec: raw, Engines: b.catalog.Engines(), Author: acme})
	require.NoError(t, err)
	require.Nil(t, m)
	require.Equal(t, []string{"invalid_value"}, codes(rs))
	require.Equal(t, "seats.plus[0].engine", rs[0].Path)

	raw = []byte(`{"name": "Acme", "surprise": true}`)
	rs, _, err = modes.Validate(context.Background(), lax, modes.Request{Spec: raw, Engines: b.catalog.Engines(), Author: acme})
	require.NoError(t, err)
	require.Equal(t, []string{"invalid_value"}, codes(rs))
	require.Equal(t, "surprise", rs[0].Path)
}

// TestBuiltinModesClearTheFloor: the floor rule leaves the built-in modes'
// prices standing (docs/modes.md quotes these figures).
func TestBuiltinModesClearTheFloor(t *testing.T) {
	t.Parallel()
	b := setupSpec(t)
	for id, want := range map[string][2]string{
		"conclave-standard": {"0.04", "0.08"},
		"conclave-max":      {"0.07", "0.16"},
	} {
		m, ok := b.catalog.Resolve(id)
		require.True(t, ok)
		s := &modes.Spec{SeatsByTier: map[core.Tier][]modes.Seat{}, Staff: map[string]modes.Staff{}, MaxRounds: m.Deliberation.MaxRounds}
		for tier, row := range m.Deliberation.Seats {
			for _, seat := range row {
				s.SeatsByTier[tier] = append(s.SeatsByTier[tier], modes.Seat{Engine: seat.Engine, Backup: seat.Backup})
			}
		}
		for role, st := range m.Deliberation.Staff {
			s.Staff[role] = modes.Staff{Engine: st.Engine, Backup: st.Backup}
		}
		floor, rec := modes.Floor(s, b.catalog.Engines(), nil)
		require.Equal(t, want, [2]string{floor.String(), rec.String()}, id)
		require.GreaterOrEqual(t, m.Pricing.Price(), floor, id)
		for _, v := range m.Pricing.SurchargeByDepth {
			require.GreaterOrEqual(t, v, floor, id)
		}
	}
}
