package wire

import (
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/modes"
)

// ModeValidation is the answer to a mode spec's validation, the same for
// POST /v1/modes/validate and the validate_mode tool: ok with the hash the
// mode would have, or every refusal. The floor is null when the spec does
// not decode. Object is "mode.validation" on REST and left out by the tool,
// whose result is a tool result, not an API object.
type ModeValidation struct {
	Object         string          `json:"object,omitempty"`
	OK             bool            `json:"ok"`
	Refusals       []modes.Refusal `json:"refusals"`
	ModeConfigHash *string         `json:"mode_config_hash"`
	FloorUSD       *core.Dollars   `json:"floor_usd"`
	RecommendedUSD *core.Dollars   `json:"recommended_usd"`
}

// ModeValidationOf is c on the wire, with object as its Object.
func ModeValidationOf(c *modes.Checked, object string) ModeValidation {
	out := ModeValidation{Object: object, OK: c.OK(), Refusals: c.Refusals}
	if out.Refusals == nil {
		out.Refusals = []modes.Refusal{}
	}
	if c.ConfigHash != "" {
		out.ModeConfigHash = &c.ConfigHash
	}
	if c.Floor != nil {
		out.FloorUSD, out.RecommendedUSD = &c.Floor.FloorUSD, &c.Floor.RecommendedUSD
	}
	return out
}
