package mcp

import "encoding/json"

// The tools, in the order tools/list gives them. A tool is listed only
// once it works: deliberate only on a server that deliberates, the
// authoring tools only on a server given mode authoring (Deps.Modes);
// run_test, certify_mode and the assistant tools arrive with the
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
	if h.modes != nil {
		tools = append(tools, h.authoringTools()...)
	}
	return newToolSet(tools...)
}

// lifecycle is how a mode goes from a spec to the marketplace, told to an
// agent by the authoring tools.
const lifecycle = "A mode's lifecycle: save_mode saves the spec as a draft (nothing is served) → save_mode with release: true " +
	"releases the draft as the mode's next version, which never changes and which your organisation can call at once by " +
	"the mode's id or ticker → list_mode requests a marketplace listing (pending) → the operator reviews it; approval " +
	"publishes the version reviewed to every organisation → list_mode publishes a later version once it is certified."

// specSchema is the spec argument: described, not spelled out, since
// docs/modes.md and the refusals are the authority on its rules.
const specSchema = `{"type": "object",
	"description": "The mode spec, one JSON object: name; ticker (four letters A-Z, the mode part of ORG:MODE); use_when; seats with min_tier, or seats_by_tier ({experience|plus|pro: [{engine, backup}]}), 2 to 6 seats of at least two provider families per row, engines from list_engines; staff ({judge|synthesis|grounding|classifier: {engine, backup}}); critique (always, deep or never); max_rounds (1 to 5); cost_ceiling_usd; api_commercial with q_surcharge_by_depth ({light, medium, deep}) or q_surcharge_usd, each at least the price floor. docs/modes.md describes every field and rule."}`

// modeIDSchema names one of the caller's modes.
const modeIDSchema = `{"type": "string", "minLength": 1,
	"description": "One of your organisation's modes: its id (acme-panl) or ticker (ACME:PANL), without an @lab or @vN suffix."}`

// modeOutSchema is an organisation's mode as the authoring tools answer it.
const modeOutSchema = `{"type": "object",
	"required": ["id", "ticker", "name", "draft", "latest_version", "listing", "certified_version", "published_version"],
	"properties": {
		"id": {"type": "string", "description": "The model argument that calls the mode."},
		"ticker": {"type": "string"}, "name": {"type": "string"},
		"draft": {"type": "object", "required": ["revision", "state", "validated"], "properties": {
			"revision": {"type": "integer", "description": "Counts the draft's changes; name it to replace or release this draft."},
			"state": {"type": "string", "enum": ["pending", "released"]},
			"validated": {"type": "boolean"}}},
		"latest_version": {"type": "integer", "description": "The newest released version; 0 when never released."},
		"listing": {"type": "object", "required": ["state", "revision"], "properties": {
			"state": {"type": "string", "enum": ["none", "pending", "approved", "rejected", "delisted"]},
			"revision": {"type": "integer", "description": "Counts the listing's changes; list_mode may name it."}}},
		"certified_version": {"type": "integer", "description": "0 when none."},
		"published_version": {"type": "integer", "description": "The version other organisations are served; 0 when none."}}}`

// authoringTools are the tools of mode authoring (core/modes), answered by
// the tool server itself.
func (h *Handler) authoringTools() []*tool {
	return []*tool{
		{
			desc: toolDesc{
				Name:  "validate_mode",
				Title: "Check a mode spec",
				Description: "Check a mode spec against every rule a save applies, saving nothing. Answers ok and every refusal " +
					"at once, each with its code, a message and the path of the field at fault (ticker_taken adds a free " +
					"suggested_ticker; price_below_floor adds floor_usd and recommended_usd); the spec's price floor and " +
					"recommended price whenever the spec's fields have the right types; and, when it passes, the " +
					"mode_config_hash the mode would run with. Pass mode_id when the spec is a new draft of one of your " +
					"modes, so that the mode's own ticker does not count as taken. Counted against your key's rate like a call.",
				InputSchema: schema(`{"type": "object", "required": ["spec"], "additionalProperties": false, "properties": {
					"spec": ` + specSchema + `,
					"mode_id": ` + modeIDSchema + `}}`),
				OutputSchema: schema(`{"type": "object", "required": ["ok", "refusals", "mode_config_hash", "floor_usd", "recommended_usd"],
					"properties": {
						"ok": {"type": "boolean", "description": "No refusal: the spec can be saved."},
						"refusals": {"type": "array", "items": {"type": "object", "required": ["code", "message", "path"], "properties": {
							"code": {"type": "string"}, "message": {"type": "string"},
							"path": {"type": "string", "description": "The field at fault (seats_by_tier.plus[1].engine); empty for the whole spec."},
							"suggested_ticker": {"type": "string"}, "floor_usd": {"type": "number"}, "recommended_usd": {"type": "number"}}}},
						"mode_config_hash": {"type": ["string", "null"]},
						"floor_usd": {"type": ["number", "null"]},
						"recommended_usd": {"type": ["number", "null"]}}}`),
				Annotations: annotations{ReadOnlyHint: true, DestructiveHint: false, IdempotentHint: true, OpenWorldHint: false},
			},
			selfAnswered: true,
			required:     []string{"spec"},
			run:          h.validateMode,
		},
		{
			desc: toolDesc{
				Name:  "save_mode",
				Title: "Save or release a mode",
				Description: "Save a mode spec as your organisation's draft, and release it. " + lifecycle + " Forms: {spec} " +
					"saves a new mode, whose id and ticker come from your organisation's ticker and the spec's ticker; " +
					"{spec, mode_id} saves a new draft of that mode (a mode whose draft is unreleased refuses it with " +
					"draft_pending unless revision names that draft, which it then replaces); add release: true to either " +
					"to release the saved draft in the same call; {mode_id, release: true} releases the mode's saved draft " +
					"(revision: the draft revision you read; another since is draft_changed). A spec that fails validation " +
					"saves nothing: mode_invalid with every refusal in conclave.refusals (validate_mode checks first). " +
					"Answers the mode and, on release, the new version and its mode_config_hash. Test keys cannot change modes (test_key_not_allowed).",
				InputSchema: schema(`{"type": "object", "additionalProperties": false, "properties": {
					"spec": ` + specSchema + `,
					"mode_id": ` + modeIDSchema + `,
					"release": {"type": "boolean", "default": false,
						"description": "Release the draft as the mode's next version: the one saved by this call, or with no spec the mode's saved draft."},
					"revision": {"type": "integer", "minimum": 0,
						"description": "The draft revision you read (draft.revision): with a spec, the unreleased draft it replaces; without, the draft to release."}}}`),
				OutputSchema: schema(`{"type": "object", "required": ["mode", "version"], "properties": {
					"mode": ` + modeOutSchema + `,
					"version": {"type": ["object", "null"], "description": "The version released by this call; null when nothing was released.",
						"required": ["version", "mode_config_hash"], "properties": {
							"version": {"type": "integer"}, "mode_config_hash": {"type": "string"}}}}}`),
				Annotations: annotations{ReadOnlyHint: false, DestructiveHint: false, IdempotentHint: false, OpenWorldHint: false},
			},
			selfAnswered: true,
			requiredAny:  [][]string{{"spec", "mode_id"}},
			run:          h.saveMode,
		},
		{
			desc: toolDesc{
				Name:  "list_mode",
				Title: "List a mode in the marketplace",
				Description: "Take one of your released modes to the marketplace. " + lifecycle + " On a mode whose listing was " +
					"never requested, list_mode requests it: the listing is pending until the operator reviews it. On a mode " +
					"whose listing is approved, it publishes version (by default the certified one), which must be the " +
					"certified version. Refused with mode_not_released before a first release, conflict while the listing " +
					"is pending, listing_rejected or listing_delisted once review rejected or delisted it, published_version_uncertified " +
					"for another version. Answers the mode. Test keys cannot change modes (test_key_not_allowed).",
				InputSchema: schema(`{"type": "object", "additionalProperties": false, "properties": {
					"mode_id": ` + modeIDSchema + `,
					"mode": {"type": "string", "minLength": 1, "description": "Another name for mode_id."},
					"version": {"type": "integer", "minimum": 1,
						"description": "Once the listing is approved: the version to publish (the certified one). Not read before."},
					"listing_revision": {"type": "integer", "minimum": 0,
						"description": "The listing revision you read (listing.revision); another since is listing_changed."}}}`),
				OutputSchema: schema(`{"type": "object", "required": ["mode"], "properties": {"mode": ` + modeOutSchema + `}}`),
				Annotations:  annotations{ReadOnlyHint: false, DestructiveHint: false, IdempotentHint: false, OpenWorldHint: false},
			},
			selfAnswered: true,
			requiredAny:  [][]string{{"mode_id", "mode"}},
			aliases:      map[string]string{"mode": "mode_id"},
			run:          h.listMode,
		},
	}
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
