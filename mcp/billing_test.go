package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// volatile are the fields that differ between two runs of one deliberation
// whatever carries them: ids, clocks and timings.
var volatile = map[string]bool{
	"id": true, "request_id": true, "created": true, "created_at": true, "completed_at": true,
	"started_at": true, "ended_at": true, "latency_ms": true, "duration_ns": true, "payer": true,
}

// stable is v with every volatile field removed, at any depth.
func stable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if !volatile[k] {
				out[k] = stable(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = stable(e)
		}
		return out
	}
	return v
}

// A billed deliberate over MCP and the same deliberation over REST, by two
// organisations with the same balance: the same answer and panel, the same
// bill taken from the balance, the same receipt, and the same replay for a
// repeat — which bills nothing more on either carrier.
func TestMCPAndRESTBillTheSame(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ctx := context.Background()
	restOrg, _, err := tb.store.CreateOrg(ctx, &core.CreateOrgParams{Name: "REST Org"})
	require.NoError(t, err)
	restKey := tb.newKey(t, restOrg.ID)
	balance := func(orgID string) core.Micros {
		b, err := tb.store.GetBalance(ctx, orgID)
		require.NoError(t, err)
		require.Zero(t, b.Held)
		return b.Balance
	}
	mcpBefore, restBefore := balance(tb.org.ID), balance(restOrg.ID)
	require.Equal(t, mcpBefore, restBefore)

	args := map[string]any{"model": "conclave-standard", "messages": messages(question), "max_cost_usd": 1.5}
	body, err := json.Marshal(map[string]any{"model": "conclave-standard", "messages": messages(question), "panel": map[string]any{"max_cost_usd": 1.5}})
	require.NoError(t, err)
	restCall := func() (*reply, map[string]any) {
		r := tb.post(t, "/v1/chat/completions", restKey, string(body))
		require.Equal(t, http.StatusOK, r.status, r.raw)
		var out map[string]any
		r.json(t, &out)
		return r, out
	}
	mcpCall := func() map[string]any {
		res := tb.callTool(t, tb.key, "deliberate", args)
		require.False(t, res.IsError, res.Content[0].Text)
		var out map[string]any
		res.text(t, &out)
		return out
	}

	viaMCP := mcpCall()
	_, viaREST := restCall()
	require.Equal(t, stable(viaREST), stable(viaMCP), "the same completion and panel")
	billed := viaMCP["panel"].(map[string]any)["billed_usd"].(float64)
	require.Positive(t, billed)
	require.Equal(t, usd(t, billed), mcpBefore-balance(tb.org.ID), "MCP billed the panel's amount")
	require.Equal(t, usd(t, billed), restBefore-balance(restOrg.ID), "REST billed the same")

	mcpID := viaMCP["panel"].(map[string]any)["request_id"].(string)
	restID := viaREST["panel"].(map[string]any)["request_id"].(string)
	rc := tb.callTool(t, tb.key, "get_receipt", map[string]any{"request_id": mcpID, "include_transcript": true})
	require.False(t, rc.IsError, rc.Content[0].Text)
	var mcpReceipt, restReceipt map[string]any
	rc.text(t, &mcpReceipt)
	r := tb.send(t, http.MethodGet, "/v1/receipts/"+restID+"?include_transcript=true", restKey, "")
	require.Equal(t, http.StatusOK, r.status, r.raw)
	r.json(t, &restReceipt)
	require.Equal(t, mcpID, mcpReceipt["receipt"].(map[string]any)["request_id"])
	require.Equal(t, stable(restReceipt), stable(mcpReceipt), "the same receipt")

	// A repeat on each carrier replays the stored answer in the replay
	// form, naming the call that ran, and moves no money.
	mcpReplay := mcpCall()
	rr, restReplay := restCall()
	require.Equal(t, "true", rr.header.Get("Idempotent-Replayed"))
	require.Equal(t, true, mcpReplay["panel"].(map[string]any)["replayed"])
	require.Equal(t, mcpID, mcpReplay["panel"].(map[string]any)["request_id"])
	require.Equal(t, restID, restReplay["panel"].(map[string]any)["request_id"])
	require.Equal(t, stable(restReplay), stable(mcpReplay), "the same replay")
	require.Equal(t, usd(t, billed), mcpBefore-balance(tb.org.ID), "the MCP repeat billed nothing")
	require.Equal(t, usd(t, billed), restBefore-balance(restOrg.ID), "the REST repeat billed nothing")
}
