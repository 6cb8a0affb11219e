package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/mcp"
)

// proposal is genie_propose_mode's structured result.
type proposal struct {
	Spec  map[string]any `json:"spec"`
	Price struct {
		FloorUSD         float64            `json:"floor_usd"`
		RecommendedUSD   float64            `json:"recommended_usd"`
		SurchargeByDepth map[string]float64 `json:"q_surcharge_by_depth"`
		SurchargeUSD     *float64           `json:"q_surcharge_usd"`
	} `json:"price"`
	Reasons        map[string]string `json:"reasons"`
	ModeConfigHash string            `json:"mode_config_hash"`
	Repairs        []string          `json:"repairs"`
}

// requireValidAsReturned sends p's spec back through validate_mode, which
// must pass it with the hash and floor the proposal named; and every price
// is at least the floor.
func requireValidAsReturned(ctx context.Context, t *testing.T, tb *testBundle, p proposal) {
	t.Helper()
	cs, err := connectGoSDK(ctx, tb, tb.key)
	require.NoError(t, err)
	defer cs.Close()
	var v validated
	structured(ctx, t, cs, "validate_mode", map[string]any{"spec": p.Spec}, &v)
	require.True(t, v.OK, "%+v", v.Refusals)
	require.Empty(t, v.Refusals)
	require.NotNil(t, v.ModeConfigHash)
	require.Equal(t, p.ModeConfigHash, *v.ModeConfigHash)
	require.InDelta(t, *v.FloorUSD, p.Price.FloorUSD, 1e-9)
	require.Greater(t, p.Price.FloorUSD, 0.0)
	require.NotEmpty(t, p.Price.SurchargeByDepth)
	for depth, usd := range p.Price.SurchargeByDepth {
		require.GreaterOrEqual(t, usd, p.Price.FloorUSD, depth)
	}
}

// genie_propose_mode through the official Go SDK client: a spec designed
// from the description's words, with a reason per choice, that
// validate_mode passes as returned; proposing bills nothing and saves
// nothing. A price under the floor is raised to the recommendation; a spec
// refused for another reason is asked for again once; a spec still refused,
// or an answer without one, is no_proposal; no staff engine answering is
// genie_unavailable; a missing description is -32602.
func TestGenieProposeMode(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ctx, cs := sdkSession(t, tb, tb.key)
	before := tb.money(t, tb.org.ID)

	var p proposal
	structured(ctx, t, cs, "genie_propose_mode", map[string]any{
		"description": "A thorough frontier panel for reviewing contracts"}, &p)
	rows, ok := p.Spec["seats_by_tier"].(map[string]any)
	require.True(t, ok, "%v", p.Spec)
	require.Contains(t, rows, "pro", "frontier asks for the pro tier")
	require.Len(t, rows["pro"], 3, "the three pro engines of three families")
	require.Equal(t, "always", p.Spec["critique"], "thorough: critique on every question")
	for _, choice := range []string{"seats", "staff", "rounds", "critique", "quorum", "price"} {
		require.NotEmpty(t, p.Reasons[choice], choice)
	}
	requireValidAsReturned(ctx, t, tb, p)

	var cheap proposal
	structured(ctx, t, cs, "genie_propose_mode", map[string]any{"description": "Cheap quick answers to support tickets"}, &cheap)
	require.Contains(t, cheap.Spec["seats_by_tier"], "experience")
	require.Equal(t, "never", cheap.Spec["critique"])
	requireValidAsReturned(ctx, t, tb, cheap)

	// A price under the floor takes the recommended price, deterministically.
	var low proposal
	structured(ctx, t, cs, "genie_propose_mode", map[string]any{
		"description": "A panel for code review [[sim: propose=under_floor]]"}, &low)
	require.NotEmpty(t, low.Repairs)
	require.Contains(t, strings.Join(low.Repairs, "\n"), "raised to the recommended")
	require.InDelta(t, low.Price.RecommendedUSD, low.Price.SurchargeByDepth["light"], 1e-9)
	requireValidAsReturned(ctx, t, tb, low)

	// A refusal without a certain fix is sent back once, and the corrected
	// spec passes.
	var again proposal
	structured(ctx, t, cs, "genie_propose_mode", map[string]any{
		"description": "A panel of 4 seats for design questions [[sim: propose=broken_once]]"}, &again)
	require.Len(t, again.Spec["seats_by_tier"].(map[string]any)["plus"], 4)
	require.Contains(t, strings.Join(again.Repairs, "\n"), "asked again with invalid_value")
	requireValidAsReturned(ctx, t, tb, again)

	require.Equal(t, before, tb.money(t, tb.org.ID), "proposing bills nothing")
	var modes int
	require.NoError(t, tb.pool.QueryRow(ctx, `SELECT count(*) FROM authored_modes WHERE org_id = $1`, tb.org.ID).Scan(&modes))
	require.Zero(t, modes, "proposing saves nothing")

	out := tb.fail(t, tb.key, "genie_propose_mode", map[string]any{
		"description": "A panel for design questions [[sim: propose=broken]]"}, 502, "no_proposal")
	var refusals []refusal
	require.NoError(t, json.Unmarshal(out.Conclave["refusals"], &refusals))
	require.NotEmpty(t, refusals)
	require.Equal(t, "invalid_value", refusals[0].Code)
	tb.fail(t, tb.key, "genie_propose_mode", map[string]any{"description": "Anything [[sim: propose=prose]]"}, 502, "no_proposal")
	tb.fail(t, tb.key, "genie_propose_mode", map[string]any{"description": "Anything [[sim: error=overloaded]]"},
		502, "genie_unavailable")

	for _, args := range []map[string]any{{}, {"spec": map[string]any{}}} {
		tb.invalidParams(t, tb.key, "genie_propose_mode", args)
	}

	// It is a self-answered tool: a batch runs 8 of them, and refuses the
	// ninth with batch_too_large.
	var elems []string
	for i := 1; i <= 9; i++ {
		b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i, "method": "tools/call",
			"params": map[string]any{"name": "genie_propose_mode", "arguments": map[string]any{"description": "A panel for law"}}})
		require.NoError(t, err)
		elems = append(elems, string(b))
	}
	r := tb.post(t, mcp.Path, tb.key, "["+strings.Join(elems, ",")+"]")
	require.Equal(t, http.StatusOK, r.status, r.raw)
	var res []rpcResponse
	r.json(t, &res)
	require.Len(t, res, 9, r.raw)
	for i, one := range res[:8] {
		require.Nil(t, one.Error, "call %d: %s", i+1, r.raw)
	}
	requireBatchTooLarge(t, res[8], "9", "max_self_answered_calls")
}

// When the engines available to the caller are of one provider family,
// no row can be filled: too_few_engines; when none is available at all,
// engines_unavailable with 422, as the spec gives it for a proposal.
func TestGenieProposeModeEngines(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for id, e := range tb.catalog.Engines() {
		if e.Family != "sim-openai" {
			tb.gone.Store(id, true)
		}
	}
	tb.fail(t, tb.key, "genie_propose_mode", map[string]any{"description": "A panel for anything"}, 422, "too_few_engines")
	for id := range tb.catalog.Engines() {
		tb.gone.Store(id, true)
	}
	tb.fail(t, tb.key, "genie_propose_mode", map[string]any{"description": "A panel for anything"}, 422, "engines_unavailable")
}

// A description's limits, as the assistant reads them: the families and
// tier it allows are kept in the spec; when the engines of those families
// at that tier cannot fill a row the assistant says so, the proposer checks
// it against the engines and answers too_few_engines naming what it read;
// a reply that the description cannot be met, when the engines can meet
// it, is not believed: the assistant is asked again and the spec it then
// answers is returned. A budget under the floor is raised to the
// recommended price, and the repair says so.
func TestGenieProposeModeLimits(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ctx, cs := sdkSession(t, tb, tb.key)

	var kept proposal
	structured(ctx, t, cs, "genie_propose_mode", map[string]any{
		"description": "A frontier panel for medicine with only Anthropic and Google engines, pro tier only"}, &kept)
	pro := kept.Spec["seats_by_tier"].(map[string]any)["pro"].([]any)
	require.Len(t, pro, 2)
	for _, seat := range pro {
		require.Contains(t, []string{"sim/opus", "sim/gemini-pro"}, seat.(map[string]any)["engine"])
	}
	requireValidAsReturned(ctx, t, tb, kept)

	out := tb.fail(t, tb.key, "genie_propose_mode", map[string]any{
		"description": "A panel for tax questions using only OpenAI engines"}, 422, "too_few_engines")
	var families []string
	require.NoError(t, json.Unmarshal(out.Conclave["families"], &families))
	require.Equal(t, []string{"sim-openai"}, families)
	out = tb.fail(t, tb.key, "genie_propose_mode", map[string]any{
		"description": "Pro tier only, without Anthropic or Google"}, 422, "too_few_engines")
	require.Contains(t, out.Error.Message, "at tier pro or above")

	var again proposal
	structured(ctx, t, cs, "genie_propose_mode", map[string]any{
		"description": "A panel for history questions [[sim: propose=unfounded]]"}, &again)
	require.Contains(t, strings.Join(again.Repairs, "\n"), "asked again: the engines of")
	requireValidAsReturned(ctx, t, tb, again)

	var budget proposal
	structured(ctx, t, cs, "genie_propose_mode", map[string]any{
		"description": "Careful answers on pensions at 1 cent a question"}, &budget)
	require.Contains(t, strings.Join(budget.Repairs, "\n"), "raised to the recommended")
	require.InDelta(t, budget.Price.RecommendedUSD, *budget.Price.SurchargeUSD, 1e-9)
	requireValidAsReturned(ctx, t, tb, budget)
}
