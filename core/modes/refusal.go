package modes

import (
	"cmp"
	"slices"

	"github.com/conclavehq/conclave/core"
)

// Refusal is one reason a spec cannot be saved: a code of the wire
// contract, one human sentence, and the path of the field at fault
// ("seats_by_tier.plus[1].engine"; "" for the whole spec). Some codes carry
// more: ticker_taken a free SuggestedTicker, price_below_floor the floor and
// the recommended price.
type Refusal struct {
	Code            core.Code     `json:"code"`
	Message         string        `json:"message"`
	Path            string        `json:"path"`
	SuggestedTicker string        `json:"suggested_ticker,omitempty"`
	FloorUSD        *core.Dollars `json:"floor_usd,omitempty"`
	RecommendedUSD  *core.Dollars `json:"recommended_usd,omitempty"`
}

// SortRefusals orders refusals the way every answer lists them:
// price_override_not_allowed first (the spec asks for it), then by path,
// code and message, so that equal specs always give equal lists.
func SortRefusals(rs []Refusal) {
	first := func(r Refusal) int {
		if r.Code == core.CodePriceOverrideNotAllowed {
			return 0
		}
		return 1
	}
	slices.SortFunc(rs, func(a, b Refusal) int {
		return cmp.Or(
			cmp.Compare(first(a), first(b)),
			cmp.Compare(a.Path, b.Path),
			cmp.Compare(a.Code, b.Code),
			cmp.Compare(a.Message, b.Message),
		)
	})
}
