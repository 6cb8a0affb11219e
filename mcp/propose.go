package mcp

import (
	"context"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
)

// proposeTool is genie_propose_mode: the assistant designs a mode from a
// description (core/genie.Proposer; docs/genie.md).
func (h *Handler) proposeTool() *tool {
	return &tool{
		desc: toolDesc{
			Name:  "genie_propose_mode",
			Title: "Have the assistant design a mode",
			Description: "Describe the mode you want and the assistant designs a full mode spec for it: seats from at least two " +
				"provider families among the engines you may seat (list_engines), staff, rounds, critique, quorum and a price " +
				"at or above the floor, with the reason for each choice. The spec is checked as validate_mode checks it " +
				"before it is returned, so it passes validate_mode as returned; a spec that fails is repaired or refused " +
				"(no_proposal), never returned broken. Nothing is saved — pass the spec to save_mode — and the assistant " +
				"runs on the service's own engines: proposing is never billed. too_few_engines when the engines available " +
				"to you cannot fill a row, or those of the provider families and tier your description allows cannot " +
				"(the extra block names them).",
			InputSchema: schema(`{"type": "object", "required": ["description"], "additionalProperties": false, "properties": {
				"description": {"type": "string", "minLength": 1, "maxLength": 4096,
					"description": "The mode to design, in words: what questions it is for, its budget (cheap, frontier, a price a question), how many seats, how careful, which provider families to use or avoid."}}}`),
			OutputSchema: schema(`{"type": "object", "required": ["spec", "price", "reasons", "mode_config_hash", "repairs"], "properties": {
				"spec": {"type": "object", "description": "The mode spec: passes validate_mode as it stands; save it with save_mode."},
				"price": {"type": "object", "required": ["floor_usd", "recommended_usd"], "properties": {
					"floor_usd": {"type": "number"}, "recommended_usd": {"type": "number"},
					"q_surcharge_by_depth": {"type": "object", "additionalProperties": {"type": "number"}},
					"q_surcharge_usd": {"type": "number"}, "q_surcharge_express_usd": {"type": "number"}}},
				"reasons": {"type": "object", "additionalProperties": {"type": "string"},
					"description": "Why each choice was made: seats, staff, rounds, critique, quorum, price."},
				"mode_config_hash": {"type": "string"},
				"repairs": {"type": "array", "items": {"type": "string"},
					"description": "What was changed after the assistant answered (a price raised to the recommendation, a ticker replaced, a second ask); empty when none."}}}`),
			Annotations: annotations{ReadOnlyHint: true, DestructiveHint: false, IdempotentHint: false, OpenWorldHint: true},
		},
		selfAnswered: true,
		required:     []string{"description"},
		action:       core.ActionModesValidate,
		run:          h.proposeMode,
	}
}

// proposeMode answers genie_propose_mode. Proposing is never billed; it
// spends a request of the caller's rate like the other self-answered tools.
func (h *Handler) proposeMode(ctx context.Context, p *access.Principal, c *toolCall) *toolResult {
	if err := h.access.Meter(ctx, p, c.requestID); err != nil {
		return h.selfFailure(ctx, err, c.requestID)
	}
	prop, err := h.proposer.Propose(ctx, p, c.str("description"))
	if err != nil {
		return h.selfFailure(ctx, err, c.requestID)
	}
	return structuredResult(prop)
}
