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
	"github.com/conclavehq/conclave/core/modes/modestest"
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
var acme = modestest.Acme

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

// The fixtures of the shared corpus.
const (
	validSpec     = modestest.ValidSpec
	validAutoSpec = modestest.ValidAutoSpec
	proRow        = modestest.ProRow
)

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
	return b.validateRaw(t, raw, author, taken, unavailable...)
}

func (b *specBundle) validateRaw(t *testing.T, raw []byte, author modes.Author, taken []string, unavailable ...string) validation {
	t.Helper()
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

// TestEveryValidationCodeAlone reaches every validation code with the
// shared corpus's spec that breaks that rule and no other: the refusal list
// is exactly one refusal, of that code, at the path named, with the extra
// fields the case names.
func TestEveryValidationCodeAlone(t *testing.T) {
	t.Parallel()
	b := setupSpec(t)
	cases := modestest.Cases()

	var covered []core.Code
	for _, c := range cases {
		covered = append(covered, c.Code)
	}
	require.ElementsMatch(t, validationCodes, covered, "every validation code has exactly one case")

	for _, c := range cases {
		t.Run(string(c.Code), func(t *testing.T) {
			t.Parallel()
			got := b.validateRaw(t, c.Spec, c.Author, c.TakenTickers, c.Unavailable...)
			require.Equal(t, []string{string(c.Code)}, codes(got.refusals), "refusals: %+v", got.refusals)
			r := got.refusals[0]
			require.Equal(t, c.Path, r.Path)
			require.NotEmpty(t, r.Message)
			require.Equal(t, 400, core.InfoFor(r.Code).Status/100*100, "a validation code is a 4xx")
			require.Equal(t, c.SuggestedTicker, r.SuggestedTicker)
			if c.FloorUSD == "" {
				require.Nil(t, r.FloorUSD)
				require.Nil(t, r.RecommendedUSD)
			} else {
				require.NotNil(t, r.FloorUSD)
				require.NotNil(t, r.RecommendedUSD)
				require.Equal(t, c.FloorUSD, core.Micros(*r.FloorUSD).String())
				require.Equal(t, c.RecommendedUSD, core.Micros(*r.RecommendedUSD).String())
			}
			require.Nil(t, got.mode, "a refused spec gives no mode")
		})
	}
}

// A case an organisation's request can produce is refused the same way
// with no unavailable engine and as any organisation's author: what marks
// the other cases (an operator, no organisation, an engine out) is what
// they need.
func TestCorpusCasesByOrganisation(t *testing.T) {
	t.Parallel()
	b := setupSpec(t)
	for _, c := range modestest.Cases() {
		if !c.ByOrganisation() {
			got := b.validateRaw(t, c.Spec, acme, c.TakenTickers)
			require.NotEqual(t, []string{string(c.Code)}, codes(got.refusals), "%s needs what its case names", c.Code)
			continue
		}
		got := b.validateRaw(t, c.Spec, modes.Author{OrgID: "org_beta", OrgTicker: "ACME"}, c.TakenTickers)
		require.Equal(t, []string{string(c.Code)}, codes(got.refusals), "%s", c.Code)
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
		s["api_commercial"] = jsonValue(t, `{"price_tier": "standard",
			"q_surcharge_by_depth": {"light": 0.05, "medium": 0.10, "deep": 0.15}, "q_surcharge_usd": 0.15}`)
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
