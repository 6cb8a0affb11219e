package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/modes"
)

// The tool server reaches the same bounds as REST, through the same
// service: a spec over 64 KiB is 413 request_too_large for validate_mode
// and save_mode, a row of a thousand seats is refused with the bound it
// breaks, and an organisation past its modes is 409 conflict for
// save_mode; nothing is saved.
func TestAuthoringBoundsOverMCP(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ctx := context.Background()
	org, key := tb.newOrg(t, "Acme", "ACME")

	big := panelSpec("Acme Review Panel", "PANL")
	big["description"] = strings.Repeat("a", modes.MaxSpecBytes)
	for _, tool := range []string{"validate_mode", "save_mode"} {
		out := tb.fail(t, key, tool, map[string]any{"spec": big}, 413, "request_too_large")
		require.Contains(t, out.Error.Message, "65536")
	}

	long := panelSpec("Acme Review Panel", "PANL")
	row := make([]any, 1000)
	for i := range row {
		row[i] = map[string]any{"engine": "sim/atlas"}
	}
	long["seats_by_tier"].(map[string]any)["plus"] = row
	var got validated
	tb.succeed(t, key, "validate_mode", map[string]any{"spec": long}, &got)
	require.False(t, got.OK)
	require.Equal(t, []string{"six_seats_required"}, refusalCodes(got.Refusals))
	require.Equal(t, "seats_by_tier.plus", got.Refusals[0].Path)
	out := tb.fail(t, key, "save_mode", map[string]any{"spec": long}, 422, "mode_invalid")
	var rs []refusal
	require.NoError(t, json.Unmarshal(out.Conclave["refusals"], &rs))
	require.Equal(t, []string{"six_seats_required"}, refusalCodes(rs))

	spec, err := json.Marshal(panelSpec("Acme Review Panel", "PANL"))
	require.NoError(t, err)
	for i := range modes.DefaultMaxModes {
		ticker := fmt.Sprintf("Q%c%c%c", 'A'+i/26/26%26, 'A'+i/26%26, 'A'+i%26)
		_, err := tb.store.SaveModeDraft(ctx, &core.SaveModeDraft{OrgID: org.ID, Name: "Mode " + ticker, Ticker: ticker,
			Spec: spec, Validated: true})
		require.NoError(t, err)
	}
	out = tb.fail(t, key, "save_mode", map[string]any{"spec": panelSpec("Acme Review Panel", "PANL")}, 409, "conflict")
	require.Contains(t, out.Error.Message, "100 modes")
	own, err := tb.store.ListAuthoredModes(ctx, org.ID)
	require.NoError(t, err)
	require.Len(t, own, modes.DefaultMaxModes, "nothing more was saved")
}
