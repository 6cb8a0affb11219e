package sim

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/genie"
	"github.com/conclavehq/conclave/core/modes"
)

// proposalPrompt is a proposal's system prompt over engines at tier, as
// core/genie writes it: the lead, then INPUT.
func proposalPrompt(t *testing.T, tier core.Tier, refusals bool) string {
	t.Helper()
	in := genie.ProposalInput{Tier: tier, Engines: []genie.ProposalEngine{
		{ID: "sim/swift", Family: "sim-openai", MaxTier: core.TierExperience, Tiers: []core.Tier{core.TierExperience}, OutputPerMTok: 600_000},
		{ID: "sim/sonnet", Family: "sim-anthropic", MaxTier: core.TierPlus, Tiers: []core.Tier{core.TierExperience, core.TierPlus},
			OutputPerMTok: 15_000_000},
		{ID: "sim/gemini-flash", Family: "sim-google", MaxTier: core.TierPlus, Tiers: []core.Tier{core.TierExperience, core.TierPlus},
			OutputPerMTok: 2_500_000},
	}}
	if refusals {
		in.Refusals = []modes.Refusal{{Code: "invalid_value", Path: "critique"}}
	}
	b, err := json.Marshal(in)
	require.NoError(t, err)
	return genie.ProposeLead + " Design one spec.\n\nINPUT:\n" + string(b)
}

// The simulator answers a proposal prompt with the JSON a real engine is
// asked for, built from INPUT and the description's words; its directives
// force prose, a price under the floor and a refused critique (broken_once
// only until asked again with refusals); an unknown value is refused.
func TestProposeReply(t *testing.T) {
	t.Parallel()
	spec, reasons, ok := genie.ParseProposal(proposeReply(proposalPrompt(t, core.TierPro, false), "A frontier panel of 2 seats", ""))
	require.True(t, ok)
	require.NotEmpty(t, reasons["seats"])
	var s struct {
		SeatsByTier map[core.Tier][]seatSpec `json:"seats_by_tier"`
		Critique    string                   `json:"critique"`
		Ticker      string                   `json:"ticker"`
	}
	require.NoError(t, json.Unmarshal(spec, &s))
	require.Len(t, s.SeatsByTier[core.TierPlus], 2, "no two families reach pro here: plus, two seats as asked")
	require.Equal(t, "sim/sonnet", s.SeatsByTier[core.TierPlus][0].Engine, "frontier: the dearest first")
	require.Equal(t, "AFPO", s.Ticker)

	_, _, ok = genie.ParseProposal(proposeReply(proposalPrompt(t, core.TierPlus, false), "Anything", "prose"))
	require.False(t, ok)

	spec, _, ok = genie.ParseProposal(proposeReply(proposalPrompt(t, core.TierPlus, false), "Cheap answers", "under_floor"))
	require.True(t, ok)
	require.Contains(t, string(spec), `"q_surcharge_usd":0.01`)
	require.Contains(t, string(spec), `"seats_by_tier":{"experience"`)

	spec, _, _ = genie.ParseProposal(proposeReply(proposalPrompt(t, core.TierPlus, false), "Anything", "broken_once"))
	require.Contains(t, string(spec), `"critique":"sometimes"`)
	spec, _, _ = genie.ParseProposal(proposeReply(proposalPrompt(t, core.TierPlus, true), "Anything", "broken_once"))
	require.NotContains(t, string(spec), `"critique":"sometimes"`)
	spec, _, _ = genie.ParseProposal(proposeReply(proposalPrompt(t, core.TierPlus, true), "Anything", "broken"))
	require.Contains(t, string(spec), `"critique":"sometimes"`)

	d, err := parseDirectives("x [[sim: propose=under_floor]]", "")
	require.NoError(t, err)
	require.Equal(t, "under_floor", d.propose)
	_, err = parseDirectives("x [[sim: propose=sloppy]]", "")
	require.ErrorContains(t, err, "propose")
}
