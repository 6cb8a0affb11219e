package web

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core/modes/modestest"
)

// specDiff lists, field by field and in path order, what changed between
// two specs: a changed value, a field added and a field removed, down to
// a seat of a row; equal specs, however spaced, differ in nothing.
func TestSpecDiff(t *testing.T) {
	t.Parallel()
	from := json.RawMessage(`{"name": "Panel", "max_rounds": 2, "seats_by_tier": {"plus": [{"engine": "a", "backup": "b"}]},
		"api_commercial": {"q_surcharge_usd": 0.30}, "pool": []}`)
	to := json.RawMessage(`{"name": "Panel", "max_rounds": 3, "seats_by_tier": {"plus": [{"engine": "a"}, {"engine": "c"}]},
		"api_commercial": {"q_surcharge_usd": 0.30}, "quorum": 2}`)
	require.Equal(t, []diffLine{
		{Path: "max_rounds", From: "2", To: "3", Kind: "changed"},
		{Path: "pool", From: "[]", Kind: "removed"},
		{Path: "quorum", To: "2", Kind: "added"},
		{Path: "seats_by_tier.plus[0].backup", From: `"b"`, Kind: "removed"},
		{Path: "seats_by_tier.plus[1].engine", To: `"c"`, Kind: "added"},
	}, specDiff(from, to))
	require.Equal(t, []diffLine{{Path: "name", To: `"x"`, Kind: "added"}}, specDiff(json.RawMessage(`{}`), json.RawMessage(`{"name":"x"}`)))
	require.Empty(t, specDiff(from, json.RawMessage(`{ "pool":[], "api_commercial":{"q_surcharge_usd":0.30},"max_rounds":2,
		"seats_by_tier":{"plus":[{"backup":"b","engine":"a"}]},"name":"Panel"}`)))
	require.Equal(t, []diffLine{{Path: "name", From: `"<b>"`, To: `"x"`, Kind: "changed"}},
		specDiff(json.RawMessage(`{"name": "<b>"}`), json.RawMessage(`{"name": "x"}`)), "text is shown as written, unescaped")
}

// The builder's fields hold a spec: the corpus's valid spec read into the
// form and made back into a spec is the same spec, field for field, with
// the fields the form has no place for kept in the advanced JSON.
func TestBuilderFormRoundTrip(t *testing.T) {
	t.Parallel()
	vals := formFromSpec(json.RawMessage(modestest.ValidSpec))
	require.Equal(t, "sim/atlas sim/gemini-flash\nsim/sonnet sim/atlas\nsim/gemini-flash sim/sonnet", vals["seats_plus"])
	require.Equal(t, "sim/swift", vals["staff_classifier"])
	require.Equal(t, "0.30", vals["surcharge_usd"])
	require.Equal(t, "0.25", vals["surcharge_medium"])
	require.JSONEq(t, `{"straggler_deadline_s": 20, "express_threshold": 0.2, "api_commercial": {"price_tier": "standard"}}`, vals["extra"])
	spec, local := specFromForm(vals)
	require.Empty(t, local)
	require.Empty(t, specDiff(json.RawMessage(modestest.ValidSpec), spec))

	vals["seats_pro"], vals["max_rounds"], vals["extra"] = "a b c", "two", "[1]"
	spec, local = specFromForm(vals)
	require.Equal(t, []string{"seats_pro", "extra"}, []string{local[0].Field, local[1].Field})
	var back map[string]any
	require.NoError(t, json.Unmarshal(spec, &back))
	require.Equal(t, "two", back["max_rounds"], "a number that is not one is passed on for the validation to refuse")
}

// A refusal's path names the field beside which it is shown; a path the
// form has no field for is shown above the form.
func TestFieldOf(t *testing.T) {
	t.Parallel()
	extra := map[string]string{"extra": `{"pool": ["a"], "api_commercial": {"price_tier": "x"}}`}
	for path, field := range map[string]string{
		"":                               "",
		"ticker":                         "ticker",
		"seats_by_tier.plus[1].engine":   "seats_plus",
		"seats_by_tier.gold":             "",
		"seats_by_tier":                  "",
		"staff.judge.backup":             "staff_judge",
		"api_commercial.q_surcharge_usd": "surcharge_usd",
		"api_commercial.q_surcharge_by_depth.deep": "surcharge_deep",
		"api_commercial.price_tier":                "extra",
		"pool[0]":                                  "extra",
		"family_diversity":                         "",
	} {
		require.Equal(t, field, fieldOf(path, extra), path)
	}
}

// A staff role the form cannot hold (one held to a tier) stays in the
// advanced JSON, beside the roles the form holds.
func TestBuilderKeepsWhatTheFormCannotHold(t *testing.T) {
	t.Parallel()
	spec := json.RawMessage(`{"staff": {"judge": {"engine": "a", "tier": "pro"}, "synthesis": {"engine": "b"}}, "min_tier": "plus",
		"seats": [{"engine": "auto"}]}`)
	vals := formFromSpec(spec)
	require.Equal(t, "b", vals["staff_synthesis"])
	require.JSONEq(t, `{"staff": {"judge": {"engine": "a", "tier": "pro"}}, "min_tier": "plus", "seats": [{"engine": "auto"}]}`, vals["extra"])
	back, local := specFromForm(vals)
	require.Empty(t, local)
	require.JSONEq(t, string(spec), string(back))
}
