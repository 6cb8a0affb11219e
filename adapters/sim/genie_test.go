package sim

import (
	"encoding/json"
	"strings"
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

// The simulator reads a description's limits as an engine is asked to:
// families named after "only" are the ones allowed, those after a negation
// are left out, "X tier only" is the least tier; when the engines left
// cannot seat two families in a row it replies that the description cannot
// be met, naming what it read. A budget a question sets every surcharge.
// The unfounded directive says it cannot be met until told otherwise.
func TestProposeReplyLimits(t *testing.T) {
	t.Parallel()
	engines := func(t *testing.T) []genie.ProposalEngine {
		var in genie.ProposalInput
		_, doc, _ := strings.Cut(proposalPrompt(t, core.TierPro, false), "\nINPUT:\n")
		require.NoError(t, json.Unmarshal([]byte(doc), &in))
		return in.Engines
	}(t)
	all := []string{"sim-anthropic", "sim-google", "sim-openai"}
	for _, tc := range []struct {
		description string
		want        genie.Unable
	}{
		{"A panel for tax law", genie.Unable{Families: all, MinTier: core.TierExperience}},
		{"Only Anthropic and Google engines, please", genie.Unable{Families: []string{"sim-anthropic", "sim-google"}, MinTier: core.TierExperience}},
		{"No OpenAI or Google; plus tier only", genie.Unable{Families: []string{"sim-anthropic"}, MinTier: core.TierPlus}},
		{"Just OpenAI. Not Anthropic", genie.Unable{Families: []string{"sim-openai"}, MinTier: core.TierExperience}},
		{"Only the best, without google", genie.Unable{Families: []string{"sim-anthropic", "sim-openai"}, MinTier: core.TierExperience}},
	} {
		require.Equal(t, tc.want, limitsOf(engines, tc.description), tc.description)
	}

	u, ok := genie.ParseUnable(proposeReply(proposalPrompt(t, core.TierPro, false), "A panel with only OpenAI engines", ""))
	require.True(t, ok)
	require.Equal(t, []string{"sim-openai"}, u.Families)
	u, ok = genie.ParseUnable(proposeReply(proposalPrompt(t, core.TierPro, false), "Anthropic and Google, pro tier only", ""))
	require.True(t, ok, "no engine here reaches pro")
	require.Equal(t, core.TierPro, u.MinTier)

	spec, _, ok := genie.ParseProposal(proposeReply(proposalPrompt(t, core.TierPro, false), "Only Anthropic and Google, plus tier only, 5 cents a question", ""))
	require.True(t, ok)
	var s modesSpec
	require.NoError(t, json.Unmarshal(spec, &s))
	require.Len(t, s.SeatsByTier[core.TierPlus], 2)
	for _, seat := range s.SeatsByTier[core.TierPlus] {
		require.Contains(t, []string{"sim/sonnet", "sim/gemini-flash"}, seat.Engine)
	}
	require.Equal(t, core.Dollars(50_000), *s.APICommercial.SurchargeUSD)
	require.Equal(t, core.Dollars(50_000), s.APICommercial.SurchargeByDepth["deep"])
	budget, ok := budgetOf("up to $1.25 per question")
	require.True(t, ok)
	require.Equal(t, core.Dollars(1_250_000), budget)

	_, ok = genie.ParseUnable(proposeReply(proposalPrompt(t, core.TierPro, false), "Anything", "unfounded"))
	require.True(t, ok)
	told := strings.Replace(proposalPrompt(t, core.TierPro, false), `"tier":"pro"`, `"tier":"pro","unfounded":"they can"`, 1)
	_, _, ok = genie.ParseProposal(proposeReply(told, "Anything", "unfounded"))
	require.True(t, ok)
}
