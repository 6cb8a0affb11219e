package modes

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// A release whose draft no longer passes answers the first refusal's code
// (invalid_request for invalid_value) with every refusal in the Detail, and
// the facts the first refusal carries beside them.
func TestRecheckFailure(t *testing.T) {
	t.Parallel()
	floor, rec := core.Dollars(20_000), core.Dollars(50_000)
	rs := []Refusal{
		{Code: core.CodePriceBelowFloor, Message: "under the floor", Path: "api_commercial.q_surcharge_usd", FloorUSD: &floor, RecommendedUSD: &rec},
		{Code: core.CodeEngineUnavailable, Message: "gone", Path: "seats[0].engine"},
	}
	e := recheckFailure(rs)
	require.Equal(t, core.CodePriceBelowFloor, e.Code)
	require.Equal(t, "api_commercial.q_surcharge_usd", e.Param)
	require.Equal(t, map[string]any{"refusals": rs, "floor_usd": floor, "recommended_usd": rec}, e.Detail)

	e = recheckFailure([]Refusal{{Code: core.CodeInvalidValue, Message: "max_rounds is out of range", Path: "max_rounds"}})
	require.Equal(t, core.CodeInvalidRequest, e.Code)
	require.Len(t, e.Detail, 1)
	require.Contains(t, e.Detail, "refusals")
}
