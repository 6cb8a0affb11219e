package modes

import (
	"encoding/json"

	"github.com/conclavehq/conclave/core"
)

// listingFields are the spec's fields that name and describe a mode, and
// whether a draft must give them. Their rules bound what is stored and
// listed — lengths and characters — so they hold for every draft, kept
// invalid or not; name and ticker also make the mode's identity.
var listingFields = map[string]bool{"name": true, "ticker": true, "description": false, "use_when": false}

// Unkeepable returns the refusals a spec cannot be kept as an invalid draft
// with: those at a listing field (name, ticker, description, use_when),
// except ticker_taken (the store decides it, against the modes then saved)
// and a description or use_when the draft leaves out. rs are the spec's
// refusals, in their order.
func Unkeepable(spec json.RawMessage, rs []Refusal) []Refusal {
	var given map[string]json.RawMessage
	_ = json.Unmarshal(spec, &given) // a spec that is not an object has refusals at "" only
	var out []Refusal
	for _, r := range rs {
		required, listing := listingFields[r.Path]
		switch {
		case !listing, r.Code == core.CodeTickerTaken:
		case !required && (given[r.Path] == nil || string(given[r.Path]) == "null"):
		default:
			out = append(out, r)
		}
	}
	return out
}
