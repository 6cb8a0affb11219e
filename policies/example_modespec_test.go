package policies_test

import (
	"context"
	"fmt"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/modes"
	"github.com/conclavehq/conclave/policies"
)

// A policy author's view of mode validation: the embedded rules (or those of
// a --policy-dir directory) answer every refusal of a spec at once, in a
// fixed order.
func ExampleModeValidator() {
	ctx := context.Background()
	v, err := policies.NewModeValidator(ctx, policies.Config{})
	if err != nil {
		panic(err)
	}
	engines := map[string]*core.Engine{
		"sim/atlas":  {ID: "sim/atlas", Family: "sim-openai", MaxTier: core.TierPlus, Adapter: "openai"},
		"sim/sonnet": {ID: "sim/sonnet", Family: "sim-anthropic", MaxTier: core.TierPlus, Adapter: "anthropic"},
	}
	spec := `{
	  "name": "Conclave Clone.",
	  "ticker": "CLNE",
	  "use_when": "Whenever.",
	  "min_tier": "plus",
	  "seats": [{"engine": "sim/atlas"}, {"engine": "sim/sonnet"}],
	  "critique": "deep",
	  "max_rounds": 2,
	  "cost_ceiling_usd": 1,
	  "api_commercial": {"q_surcharge_usd": 0.10, "price_override_acknowledged": true}
	}`
	refusals, _, err := modes.Validate(ctx, v, modes.Request{
		Spec:         []byte(spec),
		Engines:      engines,
		Author:       modes.Author{OrgID: "org_acme", OrgTicker: "ACME"},
		TakenTickers: []string{"ACME:CLNE"},
	})
	if err != nil {
		panic(err)
	}
	for _, r := range refusals {
		line := fmt.Sprintf("%s at %q", r.Code, r.Path)
		if r.SuggestedTicker != "" {
			line += ", try " + r.SuggestedTicker
		}
		fmt.Println(line)
	}
	// Output:
	// price_override_not_allowed at "api_commercial.price_override_acknowledged"
	// name_edge_punctuation at "name"
	// name_reserved at "name"
	// seat_engine_above_tier at "seats[0].engine"
	// seat_engine_above_tier at "seats[1].engine"
	// ticker_taken at "ticker", try CLNA
}
