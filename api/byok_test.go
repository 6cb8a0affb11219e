package api_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/adapters/sim"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/byok"
)

// An organisation with its own OpenAI key: its OpenAI-family seats run on
// that key (the receipt's source says so, fee rate 0.5%), Conclave charges
// no tokens for them, and judge and synthesis stay on the service's keys.
// The bill is recomputed from the receipt, the balance moved by exactly it.
func TestChatBillsOwnKeySeatsAtTheirFee(t *testing.T) {
	t.Parallel()
	cb := setupChat(t)
	ctx := context.Background()
	rec, err := byok.NewKeyCredential(cb.sealer, cb.org.ID, "openai", "sk-acme-own-openai-key-0123456789")
	require.NoError(t, err)
	_, err = cb.store.SetProviderCredential(ctx, rec)
	require.NoError(t, err)

	r := cb.do(t, "POST", "/v1/chat/completions", cb.key, chatBody("conclave-standard", hardQuestion, ""))
	require.Equal(t, 200, r.status, r.raw)
	billed := billedMicros(t, r)
	id := r.body["panel"].(map[string]any)["request_id"].(string)
	rc, err := cb.store.GetReceipt(ctx, cb.org.ID, id)
	require.NoError(t, err)

	var own, service int
	var calls []core.BilledCall
	for _, c := range rc.Seats {
		eng, ok := cb.catalogEngine(c.ModelUsed)
		require.True(t, ok, c.ModelUsed)
		if eng.Family == "sim-openai" {
			require.Equal(t, "byok:openai", c.Source, "seat %s on %s", c.Role, c.ModelUsed)
			require.EqualValues(t, 5_000, c.FeeRatePPM, "0.5% on the organisation's key")
			own++
		} else {
			require.Equal(t, core.SourceService, c.Source)
			require.EqualValues(t, 50_000, c.FeeRatePPM)
			service++
		}
		require.Equal(t, core.CallFee(c.RealCost, c.FeeRatePPM), c.Fee)
		calls = append(calls, core.BilledCall{RealCost: c.RealCost, BYOK: core.IsBYOKSource(c.Source)})
	}
	for _, c := range rc.Staff {
		require.Equal(t, core.SourceService, c.Source, "staff %s runs on the service's keys", c.Role)
		calls = append(calls, core.BilledCall{RealCost: c.RealCost})
	}
	require.Positive(t, own, "the standard mode seats an OpenAI-family engine")
	require.Positive(t, service)
	want := core.ComputeBill(core.BillInput{Calls: calls, Surcharge: rc.Surcharge, Ceiling: 2 * core.MicrosPerUSD})
	require.Equal(t, want.Billed, billed, "token charge without the own-key calls, fees at their rates, surcharge")
	require.Equal(t, want.TokenCharge, rc.TokenCharge)
	require.Equal(t, want.PlatformFee, rc.PlatformFee)
	cb.requireBalanceMoved(t, core.TrialCredit, billed)
	require.Equal(t, own, cb.prov.Simulator().Stats().Callers[sim.KeyCaller("sk-acme-own-openai-key-0123456789")],
		"every own-key seat call reached the provider with the organisation's key, and nothing else did")
}
