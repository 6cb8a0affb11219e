package core_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

func TestCredentialSources(t *testing.T) {
	t.Parallel()
	require.Equal(t, "service", core.SourceService)
	require.Equal(t, "byok:openai", core.SourceBYOK("openai"))
	require.Equal(t, "byok:aws", core.SourceBYOK("aws"))
	for _, s := range []string{core.SourceBYOK("openai"), core.SourceBYOK("aws"), "byok:mistral"} {
		require.True(t, core.IsBYOKSource(s), s)
		require.Equal(t, core.FeeRateBYOKPPM, core.FeeRate(core.IsBYOKSource(s)))
	}
	for _, s := range []string{core.SourceService, "", "byok", "BYOK:openai", "service:byok:x"} {
		require.False(t, core.IsBYOKSource(s), s)
		require.Equal(t, core.FeeRateServicePPM, core.FeeRate(core.IsBYOKSource(s)))
	}
	// A BYOK call adds no token charge and a 0.5% fee on its real cost.
	b := core.ComputeBill(core.BillInput{Calls: []core.BilledCall{
		{RealCost: 1_000_000, BYOK: core.IsBYOKSource("byok:openai")},
		{RealCost: 200_000, BYOK: core.IsBYOKSource(core.SourceService)},
	}})
	require.Equal(t, core.Micros(200_000), b.TokenCharge)
	require.Equal(t, core.Micros(5_000+10_000), b.PlatformFee)
}
