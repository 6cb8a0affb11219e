package modes_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/modes"
)

func usd(s string) core.Micros {
	m, err := core.ParseUSD(s)
	if err != nil {
		panic(err)
	}
	return m
}

// engines are a small catalogue: two families at pro, one cheap engine.
func engines() map[string]*core.Engine {
	return map[string]*core.Engine{
		"x/cheap": {ID: "x/cheap", Family: "X", MaxTier: core.TierExperience, InputPerMTok: usd("1"), OutputPerMTok: usd("2"), Adapter: "openai"},
		"x/big":   {ID: "x/big", Family: "X", MaxTier: core.TierPro, InputPerMTok: usd("10"), OutputPerMTok: usd("40"), Adapter: "openai"},
		"y/big":   {ID: "y/big", Family: "Y", MaxTier: core.TierPro, InputPerMTok: usd("15"), OutputPerMTok: usd("75"), Adapter: "anthropic"},
		"z/big":   {ID: "z/big", Family: "Z", MaxTier: core.TierPro, InputPerMTok: usd("1"), OutputPerMTok: usd("10"), Adapter: "gemini"},
		"x/mid":   {ID: "x/mid", Family: "X", MaxTier: core.TierPlus, InputPerMTok: usd("2"), OutputPerMTok: usd("8"), Adapter: "openai"},
	}
}

func TestDecodeNamesTheField(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, path string }{
		{`{"max_rounds": "two"}`, "max_rounds"},
		{`{"staff": {"judge": {"engine": 3}}}`, "staff.engine"},
		{`{"colour": "blue"}`, "colour"},
		{`{"seats": [{"engine": "a", "spare": "b"}]}`, "spare"},
		{`{"name": "a"} {}`, ""},
		{`[`, ""},
	} {
		_, err := modes.Decode([]byte(c.in))
		var de *modes.DecodeError
		require.ErrorAs(t, err, &de, c.in)
		require.Equal(t, c.path, de.Path, c.in)
		require.NotEmpty(t, de.Msg)
	}
	s, err := modes.Decode([]byte(`{"name": "Acme", "cost_ceiling_usd": 1.25}`))
	require.NoError(t, err)
	require.Equal(t, usd("1.25"), core.Micros(s.CostCeilingUSD))
}

// TestSchemaMatchesSpec holds the JSON Schema's properties to the JSON
// fields of Spec and its parts, so neither can gain a field alone.
func TestSchemaMatchesSpec(t *testing.T) {
	t.Parallel()
	var schema struct {
		Properties map[string]struct {
			Properties map[string]any `json:"properties"`
		} `json:"properties"`
		Defs map[string]struct {
			Properties map[string]any `json:"properties"`
		} `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(modes.Schema, &schema))
	require.Equal(t, jsonFields(reflect.TypeFor[modes.Spec]()), keys(schema.Properties))
	require.Equal(t, jsonFields(reflect.TypeFor[modes.APICommercial]()), keys(schema.Properties["api_commercial"].Properties))
	require.Equal(t, jsonFields(reflect.TypeFor[modes.Seat]()), keys(schema.Defs["seat"].Properties))
	require.Equal(t, jsonFields(reflect.TypeFor[modes.Staff]()), keys(schema.Defs["staff"].Properties))
}

func jsonFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestFloor works one floor out by hand: a pro row of x/big and y/big (each
// with the other as backup, so each seat costs the dearer, y/big), two
// rounds, a judge on z/big.
func TestFloor(t *testing.T) {
	t.Parallel()
	s := &modes.Spec{
		MinTier:   core.TierPro,
		Seats:     []modes.Seat{{Engine: "x/big", Backup: "y/big"}, {Engine: "y/big", Backup: "x/big"}},
		Staff:     map[string]modes.Staff{"judge": {Engine: "z/big"}},
		MaxRounds: 2,
	}
	// y/big on the reference question: 1000×15 + 500×75 = 52,500 micros.
	// z/big: 1000×1 + 500×10 = 6,000 micros.
	// Seats 2 × 52,500 × 2 rounds = 210,000; judge 6,000 × 2 = 12,000.
	// Reference 222,000: floor 10% = 22,200 → $0.03; recommended 25% =
	// 55,500 → $0.06.
	floor, rec := modes.Floor(s, engines(), nil)
	require.Equal(t, "0.03", floor.String())
	require.Equal(t, "0.06", rec.String())

	// An empty spec still has a floor of one cent.
	floor, rec = modes.Floor(&modes.Spec{}, engines(), nil)
	require.Equal(t, "0.01", floor.String())
	require.Equal(t, "0.01", rec.String())
}

func TestPickAuto(t *testing.T) {
	t.Parallel()
	all := func(string) bool { return true }
	pool := []string{"x/big", "x/mid", "y/big", "z/big", "x/cheap"}

	// Diversity 2 at pro: x/big, then the first new family (y/big); the
	// spare z/big backs both.
	seats, err := modes.PickAuto(core.TierPro, 2, pool, 2, engines(), all)
	require.NoError(t, err)
	require.Equal(t, []core.Seat{{Engine: "x/big", Backup: "z/big"}, {Engine: "y/big", Backup: "z/big"}}, seats)

	// Diversity 1 at plus: pool order, spares in turn.
	seats, err = modes.PickAuto(core.TierPlus, 2, pool, 1, engines(), all)
	require.NoError(t, err)
	require.Equal(t, []core.Seat{{Engine: "x/big", Backup: "y/big"}, {Engine: "x/mid", Backup: "z/big"}}, seats)

	// Unavailable engines are not eligible; too few left is an error.
	_, err = modes.PickAuto(core.TierPro, 2, pool, 1, engines(), func(id string) bool { return id != "z/big" })
	require.ErrorContains(t, err, "leave a backup")
}

func TestSortRefusals(t *testing.T) {
	t.Parallel()
	rs := []modes.Refusal{
		{Code: core.CodeNameTooShort, Path: "name"},
		{Code: core.CodeInvalidValue, Path: "critique"},
		{Code: core.CodePriceOverrideNotAllowed, Path: "api_commercial.price_override_acknowledged"},
		{Code: core.CodeOrgRequired, Path: ""},
	}
	modes.SortRefusals(rs)
	got := make([]core.Code, len(rs))
	for i, r := range rs {
		got[i] = r.Code
	}
	require.Equal(t, []core.Code{core.CodePriceOverrideNotAllowed, core.CodeOrgRequired, core.CodeInvalidValue, core.CodeNameTooShort}, got)
}

// TestToModeRunsTheCoreCheck: a spec the policy was bypassed for still
// cannot become a mode the engine cannot run.
func TestToModeRunsTheCoreCheck(t *testing.T) {
	t.Parallel()
	s := &modes.Spec{
		Ticker: "DRAW", Name: "Draw", MinTier: core.TierPro, Critique: core.CritiqueDeep, MaxRounds: 9,
		Seats: []modes.Seat{{Engine: "x/big"}, {Engine: "y/big"}},
	}
	_, err := modes.ToMode(s, modes.Author{OrgTicker: "ACME"}, engines(), nil)
	var fe *core.FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "mode.max_rounds", fe.Field)

	s.MaxRounds = 2
	m, err := modes.ToMode(s, modes.Author{OrgID: "org_1", OrgTicker: "ACME"}, engines(), nil)
	require.NoError(t, err)
	require.Equal(t, "ACME:DRAW", m.Ticker)
	require.Equal(t, "acme-draw", m.ID)
	// One seats row from pro up: only pro.
	require.Equal(t, []core.Tier{core.TierPro}, slices.Sorted(func(yield func(core.Tier) bool) {
		for t := range m.Deliberation.Seats {
			if !yield(t) {
				return
			}
		}
	}))
}

// FuzzDecode: Decode reads caller input; it returns a spec or a
// *DecodeError, never panics, and never both.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"name": "Acme", "seats": [{"engine": "auto"}], "api_commercial": {"q_surcharge_usd": 0.1}}`))
	f.Add([]byte(`{"seats_by_tier": {"plus": []}, "cost_ceiling_usd": 1e-9}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := modes.Decode(b)
		if err != nil {
			var de *modes.DecodeError
			require.ErrorAs(t, err, &de)
			require.Nil(t, s)
			return
		}
		require.NotNil(t, s)
	})
}
