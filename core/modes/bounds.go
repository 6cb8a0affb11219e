package modes

import (
	"fmt"
	"sort"

	"github.com/conclavehq/conclave/core"
)

// The bounds Go holds a spec to before the policy reads it. The policy's
// cost grows with what it is given (a rule over a row reads every seat; a
// refusal per unknown field is a refusal per field), so these bounds cap
// that cost at a few ordinary specs' worth, whatever a caller sends and
// whatever policy is loaded. Each is past anything a spec that can be
// saved needs.
const (
	// MaxSpecBytes is the largest spec, in bytes of JSON as sent: 64 KiB,
	// about sixty times an ordinary spec. A larger one is 413
	// request_too_large, validated or saved, kept invalid or not.
	MaxSpecBytes = 64 << 10
	// MaxSeats is the most seats a row may hold: the most a call convenes.
	// A longer row is six_seats_required. The policy reads it as
	// vocabulary.max_seats.
	MaxSeats = 6
	// MaxSpecFields is the most fields a spec may hold in all its objects
	// together, at every depth. The longest spec the rules accept holds
	// about ninety (every field, three tiers of six seats with backups,
	// every staff role). More is one invalid_value for the spec as a whole.
	MaxSpecFields = 128
)

// CheckSize refuses a spec over MaxSpecBytes: 413 request_too_large naming
// spec.
func CheckSize(spec []byte) error {
	if len(spec) > MaxSpecBytes {
		return core.Errorf(core.CodeRequestTooLarge, "The spec has %d bytes; a mode spec holds at most %d (64 KiB).",
			len(spec), MaxSpecBytes).WithParam("spec")
	}
	return nil
}

// bounds returns the refusals of a spec (decoded as any JSON object) past
// MaxSeats, the catalogue's length (its pool, of engines, cannot name more
// engines than there are without naming one twice) or MaxSpecFields (its
// fields are counted once its rows and pool are within theirs). A field of
// the wrong type is left to the policy, which refuses it.
func bounds(spec map[string]any, engines int) []Refusal {
	var out []Refusal
	row := func(path string, v any) {
		if seats, ok := v.([]any); ok && len(seats) > MaxSeats {
			out = append(out, Refusal{Code: core.CodeSixSeatsRequired, Path: path,
				Message: fmt.Sprintf("A seat row holds at most %d seats; this one has %d.", MaxSeats, len(seats))})
		}
	}
	row("seats", spec["seats"])
	if byTier, ok := spec["seats_by_tier"].(map[string]any); ok {
		tiers := make([]string, 0, len(byTier))
		for t := range byTier {
			tiers = append(tiers, t)
		}
		sort.Strings(tiers)
		for _, t := range tiers {
			row("seats_by_tier."+t, byTier[t])
		}
	}
	if pool, ok := spec["pool"].([]any); ok && len(pool) > engines {
		out = append(out, Refusal{Code: core.CodeInvalidValue, Path: "pool",
			Message: fmt.Sprintf("pool lists %d engines, more than the %d there are (list_engines names them); list each once.", len(pool), engines)})
	}
	// A row too long holds too many fields as well: it alone is answered.
	if len(out) > 0 {
		return out
	}
	if n := fields(spec, MaxSpecFields+1); n > MaxSpecFields {
		out = append(out, Refusal{Code: core.CodeInvalidValue, Path: "",
			Message: fmt.Sprintf("The spec holds more than %d fields in all; a mode spec needs fewer than 100.", MaxSpecFields)})
	}
	return out
}

// fields counts the fields of every object in v, at every depth, stopping
// once it reaches limit.
func fields(v any, limit int) int {
	n := 0
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, x := range v {
				if n++; n >= limit {
					return
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				if n >= limit {
					return
				}
				walk(x)
			}
		}
	}
	walk(v)
	return n
}
