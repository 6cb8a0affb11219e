package mcp

import "encoding/json"

// The tools, in the order tools/list gives them. A tool is listed only
// once it works: deliberate only on a server that deliberates; run_test,
// certify_mode and the authoring and assistant tools arrive with the
// capabilities they forward to.

// messagesSchema is the chat-completions messages array.
const messagesSchema = `{"type": "array", "minItems": 1,
	"description": "The conversation, oldest first; its last user message is the question. At least one user message.",
	"items": {"type": "object", "required": ["role", "content"], "properties": {
		"role": {"type": "string", "enum": ["system", "user", "assistant"]},
		"content": {"type": "string"}}}}`

// modelSchema is the mode a call names.
const modelSchema = `{"type": "string",
	"description": "The mode to use, exactly as list_modes gives its id: a slug such as conclave-standard, or a ticker such as CNCL:STND."}`

func (h *Handler) newTools() *toolSet {
	var tools []*tool
	if h.calls.Deliberates() {
		tools = append(tools, &tool{
			desc: toolDesc{
				Name:  "deliberate",
				Title: "Deliberate with a panel of models",
				Description: "Convene a panel of language models from several provider families on one question: they answer, " +
					"critique each other when the question deserves it, are judged, and one synthesised answer comes back " +
					"with the panel object (rounds, convergence, engines, cost). Billed to your organisation's balance. " +
					"Use it for judgement calls — decisions, trade-offs, reviews, open questions; use a single model instead for " +
					"lookups, syntax, formatting, conversions, arithmetic and verbatim reproduction. Deliberation is slow by " +
					"design (median about 30 s, up to several minutes): send a progressToken to receive progress. A retry with " +
					"the same arguments is the same call: it is never billed twice, and replays the answer once the first ends.",
				InputSchema: schema(`{"type": "object", "required": ["model", "messages"], "properties": {
					"model": ` + modelSchema + `,
					"messages": ` + messagesSchema + `,
					"max_cost_usd": {"type": "number", "exclusiveMinimum": 0,
						"description": "A ceiling on this call's bill in dollars; it can lower your key's ceiling, not raise it."},
					"tier": {"type": "string", "enum": ["experience", "plus", "pro"],
						"description": "Which engine tier fills the seats: experience (express), plus (foundation, the default) or pro (frontier)."}}}`),
				OutputSchema: schema(`{"type": "object", "required": ["id", "object", "model", "choices", "panel"], "properties": {
					"id": {"type": "string"}, "object": {"type": "string"}, "created": {"type": "integer"}, "model": {"type": "string"},
					"choices": {"type": "array"}, "usage": {"type": "object"}, "panel": {"type": "object"}}}`),
				Annotations: annotations{ReadOnlyHint: false, DestructiveHint: false, IdempotentHint: true, OpenWorldHint: true},
			},
			run: h.deliberate,
		})
	}
	tools = append(tools,
		&tool{
			desc: toolDesc{
				Name:  "estimate",
				Title: "Estimate a question before deliberating",
				Description: "Classify a question exactly as a real deliberation would (depth, task type, difficulty, " +
					"hallucination risk, whether a panel helps) and quote the mode's surcharge for it, without running the " +
					"panel. Free, but counted against your key's rate like a call.",
				InputSchema: schema(`{"type": "object", "required": ["model", "messages"], "properties": {
					"model": ` + modelSchema + `, "messages": ` + messagesSchema + `}}`),
				OutputSchema: schema(`{"type": "object", "required": ["request_id", "model", "mode", "depth", "estimated_price_usd"],
					"properties": {"request_id": {"type": "string"}, "model": {"type": "string"}, "mode": {"type": "string"},
					"depth": {"type": "string"}, "difficulty_score": {"type": "number"}, "estimated_price_usd": {"type": "number"},
					"deliberation_value": {"type": "object"}}}`),
				Annotations: annotations{ReadOnlyHint: true, DestructiveHint: false, IdempotentHint: true, OpenWorldHint: true},
			},
			run: h.estimate,
		},
		&tool{
			desc: toolDesc{
				Name:  "list_modes",
				Title: "List the modes you can call",
				Description: "List the modes (configured panels) your key may call, with their pricing by depth, provider " +
					"families and tiers. The id of an entry is the model argument of deliberate and estimate.",
				InputSchema: schema(`{"type": "object", "properties": {}}`),
				OutputSchema: schema(`{"type": "object", "required": ["object", "data"], "properties": {
					"object": {"type": "string"}, "data": {"type": "array", "items": {"type": "object", "required": ["id"]}}}}`),
				Annotations: annotations{ReadOnlyHint: true, DestructiveHint: false, IdempotentHint: true, OpenWorldHint: false},
			},
			run: h.listModes,
		},
		&tool{
			desc: toolDesc{
				Name:  "get_receipt",
				Title: "Read a call's receipt",
				Description: "Read the accounting of one of your organisation's past calls: seats, judge scores, fallbacks, " +
					"latency and the bill. request_id is panel.request_id of the answer; include_transcript adds each seat's text.",
				InputSchema: schema(`{"type": "object", "required": ["request_id"], "properties": {
					"request_id": {"type": "string", "description": "panel.request_id of the call's answer (req_…)."},
					"include_transcript": {"type": "boolean", "default": false, "description": "Add each seat's and staff call's text."}}}`),
				OutputSchema: schema(`{"type": "object", "required": ["ok", "receipt_available"], "properties": {
					"ok": {"type": "boolean"}, "receipt_available": {"type": "boolean"}, "receipt": {"type": "object"}}}`),
				Annotations: annotations{ReadOnlyHint: true, DestructiveHint: false, IdempotentHint: true, OpenWorldHint: false},
			},
			run: h.getReceipt,
		},
		&tool{
			desc: toolDesc{
				Name:  "list_engines",
				Title: "List the engines that can fill seats",
				Description: "List the engines that can fill a mode's seats, up to the highest tier you may ask for: each " +
					"engine's id, provider family and the tiers it can fill. Answered by the tool server itself.",
				InputSchema: schema(`{"type": "object", "properties": {}, "additionalProperties": false}`),
				OutputSchema: schema(`{"type": "object", "required": ["tier", "engines"], "properties": {
					"tier": {"type": "string", "description": "The highest tier you may ask for."},
					"engines": {"type": "array", "items": {"type": "object", "required": ["id", "family", "max_tier", "tiers"],
						"properties": {"id": {"type": "string"}, "family": {"type": "string"}, "max_tier": {"type": "string"},
						"tiers": {"type": "array", "items": {"type": "string"}}}}}}}`),
				Annotations: annotations{ReadOnlyHint: true, DestructiveHint: false, IdempotentHint: true, OpenWorldHint: false},
			},
			selfAnswered: true,
			run:          h.listEngines,
		},
	)
	return newToolSet(tools...)
}

// schema compacts a JSON Schema written here; a typo is a programming
// error, caught by every test that lists the tools.
func schema(s string) json.RawMessage {
	b, err := marshal(json.RawMessage(s))
	if err != nil {
		panic("mcp: a tool schema is not JSON: " + err.Error())
	}
	return b
}
