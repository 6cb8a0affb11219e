package genie

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/modes"
)

// An engine's answer gives a spec when it holds one JSON object with a
// non-empty object "spec", alone or in a ```json fence; reasons that are
// not text are dropped.
func TestParseProposal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text string
		ok         bool
		reasons    map[string]string
	}{
		{"plain", `{"spec": {"name": "Law Panel"}, "reasons": {"seats": "three families", "rounds": 2}}`, true,
			map[string]string{"seats": "three families"}},
		{"fenced", "Here it is:\n```json\n{\"spec\": {\"name\": \"Law Panel\"}}\n```\nEnjoy.", true, map[string]string{}},
		{"prose", "I would seat three engines.", false, nil},
		{"no spec", `{"reasons": {"seats": "x"}}`, false, nil},
		{"empty spec", `{"spec": {}}`, false, nil},
		{"spec not an object", `{"spec": "seats: 3"}`, false, nil},
		{"truncated", `{"spec": {"name": "Law`, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec, reasons, ok := ParseProposal(tc.text)
			require.Equal(t, tc.ok, ok)
			if !ok {
				require.Nil(t, spec)
				return
			}
			require.JSONEq(t, `{"name": "Law Panel"}`, string(spec))
			require.Equal(t, tc.reasons, reasons)
		})
	}
}

func FuzzParseProposal(f *testing.F) {
	f.Add(`{"spec": {"name": "Law Panel"}, "reasons": {"seats": "x"}}`)
	f.Add("```json\n{\"spec\": {\"a\": 1}}\n```")
	f.Add("```")
	f.Fuzz(func(t *testing.T, text string) {
		spec, _, ok := ParseProposal(text)
		if ok {
			var obj map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(spec, &obj))
			require.NotEmpty(t, obj)
		}
	})
}

// The certain repairs: a price under the floor takes the recommended price
// its refusal carries, a taken ticker the suggested one; a refusal with no
// certain fix leaves the spec as it came.
func TestRepair(t *testing.T) {
	t.Parallel()
	rec := core.Dollars(120_000)
	spec := json.RawMessage(`{"ticker": "LAWP", "critique": "sometimes",
		"api_commercial": {"q_surcharge_by_depth": {"light": 0.01, "deep": 0.5}, "q_surcharge_usd": 0.01}}`)
	fixed, lines := Repair(spec, []modes.Refusal{
		{Code: core.CodePriceBelowFloor, Path: "api_commercial.q_surcharge_by_depth.light", RecommendedUSD: &rec},
		{Code: core.CodePriceBelowFloor, Path: "api_commercial.q_surcharge_usd", RecommendedUSD: &rec},
		{Code: core.CodeTickerTaken, Path: "ticker", SuggestedTicker: "LAWA"},
		{Code: "invalid_value", Path: "critique"},
	})
	require.Len(t, lines, 3)
	require.JSONEq(t, `{"ticker": "LAWA", "critique": "sometimes",
		"api_commercial": {"q_surcharge_by_depth": {"light": 0.12, "deep": 0.5}, "q_surcharge_usd": 0.12}}`, string(fixed))

	same, lines := Repair(spec, []modes.Refusal{{Code: "invalid_value", Path: "critique"},
		{Code: core.CodePriceBelowFloor, Path: "seats_by_tier.plus[0]", RecommendedUSD: &rec}})
	require.Empty(t, lines)
	require.Equal(t, string(spec), string(same))
}

// A row needs two seats of two provider families at one tier: none at all
// is engines_unavailable at 422, one family too_few_engines.
func TestCanSeat(t *testing.T) {
	t.Parallel()
	err := CanSeat(nil)
	require.Equal(t, core.CodeEnginesUnavailable, core.AsError(err).Code)
	require.Equal(t, 422, core.AsError(err).HTTPStatus())

	oneFamily := []ProposalEngine{{ID: "a/1", Family: "a", Tiers: []core.Tier{core.TierExperience}},
		{ID: "a/2", Family: "a", Tiers: []core.Tier{core.TierExperience, core.TierPlus}}}
	require.Equal(t, core.CodeTooFewEngines, core.AsError(CanSeat(oneFamily)).Code)
	require.Equal(t, 422, core.AsError(CanSeat(oneFamily)).HTTPStatus())

	// Two families, but never at the same tier: still no row.
	apart := append(oneFamily[:1:1], ProposalEngine{ID: "b/1", Family: "b", Tiers: []core.Tier{core.TierPlus}})
	apart[0].Tiers = []core.Tier{core.TierExperience}
	require.Equal(t, core.CodeTooFewEngines, core.AsError(CanSeat(apart)).Code)

	require.NoError(t, CanSeat(append(oneFamily, ProposalEngine{ID: "b/1", Family: "b", Tiers: []core.Tier{core.TierPlus}})))
}

// An engine's reply that the description cannot be met is read only with a
// family and a valid tier, and believed only when the engines of those
// families at that tier or above indeed cannot fill a row: then
// too_few_engines (422) naming them; otherwise Confirm answers nil and the
// engine is asked again.
func TestConfirmUnable(t *testing.T) {
	t.Parallel()
	u, ok := ParseUnable("```json\n" + `{"unable": {"families": ["a"], "min_tier": "pro", "reason": "only a"}}` + "\n```")
	require.True(t, ok)
	require.Equal(t, &Unable{Families: []string{"a"}, MinTier: core.TierPro, Reason: "only a"}, u)
	for _, text := range []string{`{"unable": {"families": [], "min_tier": "pro"}}`, `{"unable": {"families": ["a"], "min_tier": "max"}}`,
		`{"spec": {"name": "x"}}`, "no"} {
		_, ok := ParseUnable(text)
		require.False(t, ok, text)
	}

	engines := []ProposalEngine{
		{ID: "a/pro", Family: "a", Tiers: []core.Tier{core.TierExperience, core.TierPlus, core.TierPro}},
		{ID: "b/plus", Family: "b", Tiers: []core.Tier{core.TierExperience, core.TierPlus}},
		{ID: "c/pro", Family: "c", Tiers: []core.Tier{core.TierExperience, core.TierPlus, core.TierPro}},
	}
	// a and b meet at plus, but not at pro: the refusal is founded.
	err := core.AsError(Confirm(engines, &Unable{Families: []string{"a", "b"}, MinTier: core.TierPro, Reason: "b stops at plus"}))
	require.NotNil(t, err)
	require.Equal(t, core.CodeTooFewEngines, err.Code)
	require.Equal(t, 422, err.HTTPStatus())
	require.Contains(t, err.Message, "a and b at tier pro or above")
	require.Contains(t, err.Message, "b stops at plus.")
	require.Equal(t, []string{"a", "b"}, err.Detail["families"])
	// A family of no engine at all is founded too, as too_few_engines.
	require.Equal(t, core.CodeTooFewEngines, core.AsError(Confirm(engines, &Unable{Families: []string{"z"}, MinTier: core.TierExperience})).Code)
	// a and c meet at pro: unfounded.
	require.NoError(t, Confirm(engines, &Unable{Families: []string{"a", "c"}, MinTier: core.TierPro}))
	require.NoError(t, Confirm(engines, &Unable{Families: []string{"a", "b"}, MinTier: core.TierPlus}))
	require.Equal(t, []core.Tier{core.TierExperience, core.TierPlus, core.TierPro}, engines[0].Tiers, "Confirm leaves the engines as they came")
}
