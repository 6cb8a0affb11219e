package deliberatetest_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/adapters/sim"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/deliberate"
	"github.com/conclavehq/conclave/plugins/byok"
	"github.com/conclavehq/conclave/plugins/egress"
	"github.com/conclavehq/conclave/plugins/protocol/direct"
	"github.com/conclavehq/conclave/plugins/providers"
)

// oneKey is a byok.Lookup holding one organisation's OpenAI key.
type oneKey struct{ rec *core.ProviderCredential }

func (o oneKey) LookupProviderCredential(_ context.Context, org, provider string) (*core.ProviderCredential, error) {
	if org == o.rec.OrgID && provider == o.rec.Provider {
		return o.rec, nil
	}
	return nil, fmt.Errorf("none: %w", core.ErrNotFound)
}

// In a whole deliberation for an organisation with its own OpenAI key,
// every seat call to an OpenAI-family engine runs on that key and says so;
// the judge, synthesis and classifier run on the service's keys even where
// their engine is of the same family; and the bill charges no tokens for
// the organisation's calls and 0.5% of their real cost.
func TestDeliberationRunsSeatsOnTheOrganisationsKey(t *testing.T) {
	t.Parallel()
	const key = "sk-acme-own-openai-key-0123456789"
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	sealer, err := byok.NewSealer(k)
	require.NoError(t, err)
	rec, err := byok.NewKeyCredential(sealer, "org-test", "openai", key)
	require.NoError(t, err)
	res, err := byok.NewResolver(byok.ResolverConfig{Store: oneKey{rec}, Sealer: sealer})
	require.NoError(t, err)
	ctx := context.Background()
	prov, err := providers.Start(ctx, providers.Config{Catalog: shared.catalog, Simulator: sim.Config{TimeScale: timeScale},
		Egress: egress.Config{MaxAttempts: 1}, BYOK: res})
	require.NoError(t, err)
	defer prov.Stop(ctx)

	mode := testMode(func(d *core.Deliberation) {
		d.Staff["classifier"] = core.Staff{Engine: "sim/clf"}
		d.Staff["synthesis"] = core.Staff{Engine: "sim/synth"} // openai family, but staff
	})
	e, err := deliberate.New(deliberate.Config{Catalog: shared.catalog, Caller: prov, Judge: direct.New(), Seed: func() int64 { return 42 }})
	require.NoError(t, err)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := e.Run(rctx, &deliberate.Request{Mode: mode, Tier: core.TierPlus, OrgID: "org-test", RequestID: "req-byok",
		Messages: []core.Message{{Role: core.RoleUser, Content: openQ + split}}})
	require.NoError(t, err)

	own := 0
	var billed []core.BilledCall
	var ownCost, serviceCost core.Micros
	for _, c := range out.Calls {
		eng, _ := shared.catalog.Engine(c.Engine)
		seatOfOpenAI := c.Seat != "" && eng.Family == "sim-openai"
		if seatOfOpenAI {
			require.Equal(t, "byok:openai", c.Source, "%s %s", c.Role, c.Engine)
			own++
			ownCost += c.Cost
		} else {
			require.Equal(t, core.SourceService, c.Source, "%s %s", c.Role, c.Engine)
			serviceCost += c.Cost
		}
		billed = append(billed, core.BilledCall{RealCost: c.Cost, BYOK: core.IsBYOKSource(c.Source)})
	}
	require.Positive(t, own, "sim/s1 sat on the panel")
	require.Equal(t, own, prov.Simulator().Stats().Callers[sim.KeyCaller(key)], "each of those reached the provider with the organisation's key")
	require.Positive(t, prov.Simulator().Stats().Callers[sim.KeyCaller(prov.SimulatorKey())])
	for _, role := range []string{deliberate.RoleSynthesis, deliberate.RoleClassifier} {
		found := false
		for _, c := range out.Calls {
			found = found || c.Role == role
		}
		require.True(t, found, "a %s call ran", role)
	}

	bill := core.ComputeBill(core.BillInput{Calls: billed})
	require.Equal(t, serviceCost, bill.TokenCharge, "the organisation's own calls carry no token charge")
	var fee core.Micros
	for _, c := range out.Calls {
		fee += core.CallFee(c.Cost, core.FeeRate(core.IsBYOKSource(c.Source)))
	}
	require.Equal(t, fee, bill.PlatformFee)
	require.Less(t, bill.Billed, out.Cost+core.CallFee(out.Cost, core.FeeRateServicePPM), "cheaper than on the service's keys")
	require.Positive(t, ownCost)
}
