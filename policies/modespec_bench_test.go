package policies_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/modes"
)

// hostileSpec is one of the costliest specs the bounds of core/modes let
// through.
type hostileSpec struct {
	name string
	spec []byte
}

// fieldFillers spend a spec's fields, up to modes.MaxSpecFields, each on one
// kind of field a rule reads one by one.
var fieldFillers = []struct {
	name string
	add  func(s map[string]any, i int) int // adds one entry, returns the fields it took
}{
	{"unknown-fields", func(s map[string]any, i int) int { s[fmt.Sprintf("extra_%d", i)] = 0; return 1 }},
	{"unknown-depths", func(s map[string]any, i int) int {
		s["api_commercial"].(map[string]any)["q_surcharge_by_depth"].(map[string]any)[fmt.Sprintf("band_%d", i)] = 0.5
		return 1
	}},
	{"unknown-tiers", func(s map[string]any, i int) int {
		s["seats_by_tier"].(map[string]any)[fmt.Sprintf("tier_%d", i)] = []any{}
		return 1
	}},
	{"staff-roles", func(s map[string]any, i int) int {
		s["staff"].(map[string]any)[fmt.Sprintf("role_%d", i)] = map[string]any{"engine": "sim/nowhere"}
		return 2
	}},
	{"staff-fields", func(s map[string]any, i int) int {
		s["staff"].(map[string]any)["judge"].(map[string]any)[fmt.Sprintf("field_%d", i)] = "x"
		return 1
	}},
	{"seat-fields", func(s map[string]any, i int) int {
		s["seats_by_tier"].(map[string]any)["plus"].([]any)[i%modes.MaxSeats].(map[string]any)[fmt.Sprintf("field_%d", i)] = "x"
		return 1
	}},
}

// hostileSpecs are the costliest specs the bounds let through, each at the
// size cap: a row of the most seats at every tier, each row seating one
// engine again and again, mixed with auto seats, behind unknown backups;
// a pool as long as the catalogue; every staff role; the rest of the fields
// spent on one kind of field (one spec per kind); and name, description and
// use_when padded with short words to bring the spec to modes.MaxSpecBytes.
func hostileSpecs(tb testing.TB, engines map[string]*core.Engine) []hostileSpec {
	tb.Helper()
	ids := slices.Sorted(maps.Keys(engines))
	var out []hostileSpec
	for _, f := range fieldFillers {
		s := rowsAndPool(ids)
		have := specFields(s)
		for i := 0; have < modes.MaxSpecFields; i++ {
			have += f.add(s, i)
		}
		require.Equal(tb, modes.MaxSpecFields, have, f.name)
		out = append(out, hostileSpec{name: f.name, spec: padTo(tb, s, modes.MaxSpecBytes)})
	}
	return out
}

// rowsAndPool is the part of every hostile spec the bounds limit by length:
// rows and pool.
func rowsAndPool(ids []string) map[string]any {
	row := func(tier int) []any {
		out := make([]any, modes.MaxSeats)
		for i := range out {
			engine := ids[tier]
			if i%3 == 2 {
				engine = "auto"
			}
			out[i] = map[string]any{"engine": engine, "backup": "sim/nowhere"}
		}
		return out
	}
	staff := map[string]any{}
	for i, role := range core.StaffRoles {
		staff[role] = map[string]any{"engine": ids[i], "backup": ids[i], "tier": "pro"}
	}
	return map[string]any{
		"name": "", "ticker": "PANL", "description": "", "use_when": "",
		"min_tier":      "experience",
		"seats_by_tier": map[string]any{"experience": row(0), "plus": row(1), "pro": row(2)},
		"pool":          slices.Clone(ids),
		"staff":         staff,
		"critique":      "deep", "max_rounds": 2, "quorum": 2, "family_diversity": 2,
		"cost_ceiling_usd": 1.5,
		"api_commercial": map[string]any{
			"q_surcharge_by_depth": map[string]any{"light": 0.001, "medium": 0.001, "deep": 0.001, "hard": 0.001},
			"q_surcharge_usd":      0.001, "q_surcharge_express_usd": 0.001,
		},
	}
}

// padTo fills name, description and use_when with words until s is size
// bytes of JSON.
func padTo(tb testing.TB, s map[string]any, size int) []byte {
	tb.Helper()
	b, err := json.Marshal(s)
	require.NoError(tb, err)
	left := size - len(b)
	require.Positive(tb, left)
	words := func(n int) string { return strings.Repeat("ab c ", n/5+1)[:n] }
	s["name"], s["description"], s["use_when"] = words(left/3), words(left/3), words(left-2*(left/3))
	b, err = json.Marshal(s)
	require.NoError(tb, err)
	require.Equal(tb, size, len(b), "bytes of the padded spec")
	return b
}

func specFields(v any) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			n += 1 + specFields(x)
		}
	case []any:
		for _, x := range v {
			n += specFields(x)
		}
	}
	return n
}

// validationFigures are the mean times of validating the ordinary spec and
// each hostile spec, taken in turn in the same loop.
type validationFigures struct {
	ordinary time.Duration
	hostile  []time.Duration
}

// worst is the index of the costliest hostile spec.
func (f validationFigures) worst() int {
	w := 0
	for i, d := range f.hostile {
		if d > f.hostile[w] {
			w = i
		}
	}
	return w
}

// measureValidation validates the ordinary spec (modestest.ValidSpec: two
// rows of three seats) and every hostile spec once per round, for rounds
// rounds (or while loop says so, when given), and returns the mean of each.
// A validation that errs fails tb.
func measureValidation(tb testing.TB, specs []hostileSpec, rounds int, loop func() bool) validationFigures {
	tb.Helper()
	v, err := modeValidator()
	require.NoError(tb, err)
	cat, err := builtin()
	require.NoError(tb, err)
	ctx := context.Background()
	one := func(spec []byte) time.Duration {
		start := time.Now()
		_, _, err := modes.Validate(ctx, v, modes.Request{Spec: spec, Engines: cat.Engines(), Author: acme})
		spent := time.Since(start)
		if err != nil {
			tb.Fatalf("validate: %v", err)
		}
		return spent
	}
	var f validationFigures
	f.hostile = make([]time.Duration, len(specs))
	n := 0
	for ; loop != nil && loop() || loop == nil && n < rounds; n++ {
		f.ordinary += one([]byte(validSpec))
		for i, s := range specs {
			f.hostile[i] += one(s.spec)
		}
	}
	if n == 0 {
		return f
	}
	f.ordinary /= time.Duration(n)
	for i := range f.hostile {
		f.hostile[i] /= time.Duration(n)
	}
	return f
}

// BenchmarkValidateWorstCase: the costliest spec the bounds let through
// (rows of the most seats, a pool as long as the catalogue, the most fields,
// at the size cap) against the ordinary spec, validated in turn in the same
// run. The goal is under 5× (docs/limits.md).
func BenchmarkValidateWorstCase(b *testing.B) {
	cat, err := builtin()
	require.NoError(b, err)
	specs := hostileSpecs(b, cat.Engines())
	f := measureValidation(b, specs, 0, b.Loop)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(f.ordinary), "ms/ordinary")
	for i, s := range specs {
		b.ReportMetric(ms(f.hostile[i]), "ms/"+s.name)
	}
	w := f.worst()
	b.ReportMetric(float64(f.hostile[w])/float64(f.ordinary), "worst/ordinary")
	b.Logf("worst: %s, %.2f ms; ordinary: %.2f ms", specs[w].name, ms(f.hostile[w]), ms(f.ordinary))
}

// TestValidateWorstCaseSmoke runs BenchmarkValidateWorstCase's measuring
// code once, so that it cannot rot unseen: every hostile spec is at the
// size cap and the field cap, passes the bounds (the policy reads it, and
// refuses what it breaks), and is measured.
func TestValidateWorstCaseSmoke(t *testing.T) {
	t.Parallel()
	b := setupSpec(t)
	specs := hostileSpecs(t, b.catalog.Engines())
	require.Len(t, specs, len(fieldFillers))
	for _, s := range specs {
		require.Equal(t, modes.MaxSpecBytes, len(s.spec), s.name)
		got := b.validateRaw(t, s.spec, acme, nil)
		require.Subset(t, codes(got.refusals), []string{
			string(core.CodeDuplicateSeatEngine), string(core.CodeAutoSeatsMixed), string(core.CodeSeatEngineNotFound),
			string(core.CodeNameTooLong), string(core.CodeDescriptionTooLong), string(core.CodeUseWhenTooLong),
		}, s.name)
		for _, r := range got.refusals {
			require.NotEqual(t, "", r.Path, "%s: no bound refused the whole spec: %+v", s.name, r)
			require.NotEqual(t, core.CodeRequestTooLarge, r.Code, s.name)
		}
	}
	f := measureValidation(t, specs, 1, nil)
	require.Positive(t, f.ordinary)
	require.Len(t, f.hostile, len(specs))
	for i := range specs {
		require.Positive(t, f.hostile[i], specs[i].name)
	}
}
