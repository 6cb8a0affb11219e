package mcp

import (
	"encoding/json"

	"github.com/conclavehq/conclave/core"
)

// The tools, in the order tools/list gives them (the spec's). A tool is
// listed only once it works: deliberate only on a server that
// deliberates, run_test and certify_mode only on a server given benchmark
// runs (Deps.Runs), the authoring tools only on a server given mode
// authoring (Deps.Modes); the assistant tools arrive with the capabilities
// they forward to.

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
		tools = append(tools, h.deliberateTool())
	}
	tools = append(tools, h.estimateTool(), h.listModesTool(), h.getReceiptTool())
	if h.runs != nil {
		tools = append(tools, h.runTools()...)
	}
	tools = append(tools, h.listEnginesTool())
	if h.modes != nil {
		// The spec's order: validate_mode, the assistant's tools, then
		// save_mode and list_mode.
		tools = append(tools, h.validateModeTool())
		tools = append(tools, h.assistantTools()...)
		tools = append(tools, h.saveModeTool(), h.listModeTool())
	}
	return newToolSet(tools...)
}

// deliberateTool is deliberate: a billed deliberation, as POST
// /v1/chat/completions.
func (h *Handler) deliberateTool() *tool {
	return &tool{
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
		action: core.ActionChatCreate,
		run:    h.deliberate,
	}
}

// estimateTool is estimate: a question classified and quoted, as POST
// /v1/estimate.
func (h *Handler) estimateTool() *tool {
	return &tool{
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
		action: core.ActionEstimate,
		run:    h.estimate,
	}
}

// listModesTool is list_modes: the modes the caller can call, as GET /v1/models.
func (h *Handler) listModesTool() *tool {
	return &tool{
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
		action: core.ActionModelsRead,
		run:    h.listModes,
	}
}

// getReceiptTool is get_receipt: a call's receipt, as GET
// /v1/receipts/{id}.
func (h *Handler) getReceiptTool() *tool {
	return &tool{
		desc: toolDesc{
			Name:  "get_receipt",
			Title: "Read a call's receipt",
			Description: "Read the accounting of one of your organisation's past calls: seats, judge scores, fallbacks, " +
				"latency and the bill. request_id is panel.request_id of the answer; include_transcript adds each seat's text.",
			InputSchema: schema(`{"type": "object", "required": ["request_id"], "properties": {
				"request_id": {"type": "string", "description": "panel.request_id of the call's answer (req_…)."},
				"include_transcript": {"type": "boolean", "default": false, "description": "Add each seat's and staff call's text, when the receipt kept it (transcript_kept)."}}}`),
			OutputSchema: schema(`{"type": "object", "required": ["ok", "receipt_available"], "properties": {
				"ok": {"type": "boolean"}, "receipt_available": {"type": "boolean"}, "receipt": {"type": "object"}}}`),
			Annotations: annotations{ReadOnlyHint: true, DestructiveHint: false, IdempotentHint: true, OpenWorldHint: false},
		},
		action: core.ActionReceiptsRead,
		run:    h.getReceipt,
	}
}

// listEnginesTool is list_engines, answered by the tool server: the
// engines the caller may seat.
func (h *Handler) listEnginesTool() *tool {
	return &tool{
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
	}
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

// The tools of mode authoring (core/modes) follow, answered by the tool
// server itself.

// validateModeTool is validate_mode, answered by the tool server: a spec
// checked against every rule a save applies.
func (h *Handler) validateModeTool() *tool {
	return &tool{
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
		action:       core.ActionModesValidate,
		run:          h.validateMode,
	}
}

// saveModeTool is save_mode, answered by the tool server: a draft saved,
// and released when asked.
func (h *Handler) saveModeTool() *tool {
	return &tool{
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
		action:       core.ActionModesWrite,
		run:          h.saveMode,
	}
}

// listModeTool is list_mode, answered by the tool server: a release
// offered on the marketplace.
func (h *Handler) listModeTool() *tool {
	return &tool{
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
		action:       core.ActionModesList,
		run:          h.listMode,
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

// batchIDSchema is the poll's argument.
const batchIDSchema = `{"type": "string",
	"description": "Poll instead of launching: the batch_id a launch answered, passed alone."}`

// dryRunSchema is a launch's quote switch.
const dryRunSchema = `{"type": "boolean", "default": false,
	"description": "true answers the price (total_cost_usd) and estimated_minutes, and starts and charges nothing."}`

// runOutSchema is what both tools answer: a launch's acceptance, or a
// poll's {ok, batch} (with certification once a certification is
// complete).
const runOutSchema = `{"type": "object", "required": ["ok"], "properties": {
	"ok": {"type": "boolean"},
	"dry_run": {"type": "boolean", "description": "Launch: whether this answer is a quote."},
	"batch_id": {"type": "string", "description": "Launch: the batch launched (absent on a dry run); poll it with batch_id."},
	"model": {"type": "string"}, "mode_key": {"type": "string"},
	"total_questions": {"type": "integer", "description": "Launch: every drawn question at every tier."},
	"per_bucket": {"type": "object", "description": "Launch: light, medium and hard — questions, and for a test run its price per question and cost (per_tier prices each tier when a run asks several)."},
	"total_cost_usd": {"type": "number", "description": "Dry run: what the launch would charge."},
	"billed_usd": {"type": "number", "description": "Launch: what was charged, up front."},
	"estimated_minutes": {"type": "integer", "description": "About how long the run takes: its questions and those queued before it, worked several at a time."},
	"status_url": {"type": "string", "description": "Launch: the REST path of the poll."},
	"note": {"type": "string"},
	"requires_listing": {"type": "boolean", "description": "A certification's dry run: the mode must be listed before it can be certified."},
	"batch": {"type": "object", "description": "Poll: the batch.", "required": ["id", "kind", "status", "progress"], "properties": {
		"id": {"type": "string"}, "kind": {"type": "string", "enum": ["test", "certify"]},
		"status": {"type": "string", "enum": ["queued", "running", "complete", "failed", "cancelled"]},
		"progress": {"type": "object", "properties": {"total": {"type": "integer"}, "answered": {"type": "integer"},
			"judged": {"type": "integer"}, "failed": {"type": "integer"}, "cancelled": {"type": "integer"}}},
		"billed_usd": {"type": "number", "description": "What the launch charged."},
		"refunded_usd": {"type": "number", "description": "What was given back: the prices of questions given up on or cancelled, or all of a failed batch's charge."},
		"result": {"description": "Once complete: the run's figures (the win rate W against the baseline and its interval, …); null before."},
		"failure": {"type": ["string", "null"]}}},
	"certification": {"type": "object", "description": "Poll of a complete certification: the verdict.", "properties": {
		"verdict": {"type": "string", "enum": ["certified", "provisional", "not_certified"]},
		"w": {"type": "number"}, "l": {"type": "number"}, "u": {"type": "number"},
		"mode_version": {"type": "integer"}, "mode_certified": {"type": "boolean"}}}}}`

// keyedLaunch is how both tools' launches are keyed and limited, told to
// an agent; the hour is runs.Config.DerivedKeyLapse's default, which
// cmd/conclave keeps.
func keyedLaunch(limitCode core.Code) string {
	return "A retry with the same arguments, on the same release of the mode, within an hour of the launch is the same " +
		"launch: it answers the same batch and is never charged twice (to launch the same run again sooner, or to name " +
		"a launch yourself, send _meta[\"conclave/idempotency-key\"]). Launches per day are limited: " + string(limitCode) +
		" says to wait retry_after_seconds."
}

// runTools are the tools of benchmark runs (core/bench/runs), forwarding
// to POST and GET /v1/tests and /v1/certify.
func (h *Handler) runTools() []*tool {
	return []*tool{
		{
			desc: toolDesc{
				Name:  "run_test",
				Title: "Test one of your modes",
				Description: "Test one of your organisation's own modes on benchmark questions: the mode and a single-model " +
					"baseline answer each question, and a panel of judges from three vendor families reads both answers " +
					"blind and says which is better. Launch with model and questions ({easy, medium, hard} counts, each 1 to " +
					"100) and optionally tiers (from free, plus, pro; every question is asked at every tier; default plus) " +
					"and punch_up (a baseline from the tier above) — or the legacy form, buckets ({light, medium, hard}) " +
					"instead of questions. Both forms take judges (from nova_pro, mistral_large, llama4_maverick; default " +
					"all three), judge_repeats (1 to 3) and judging_protocol (pairwise or plurality); at most 300 questions " +
					"counting every tier. Price: each question at the mode's standard surcharge for its band, 25% off, " +
					"charged up front to your balance; dry_run: true answers total_cost_usd and estimated_minutes and " +
					"starts and charges nothing. A run takes minutes (estimated_minutes): the launch answers at once with " +
					"batch_id; call run_test again with batch_id alone to poll it until batch.status is complete (or failed, or cancelled: DELETE on the REST poll URL cancels), " +
					"then read batch.result. " + keyedLaunch(core.CodeTestLaunchLimitExceeded),
				InputSchema: schema(`{"type": "object", "properties": {
					"model": {"type": "string", "description": "One of your organisation's own modes, by id (acme-panl) or ticker (ACME:PANL); @vN tests that version, none the latest release. Required to launch."},
					"questions": {"type": "object", "description": "Questions per difficulty: {easy, medium, hard}, each a whole number 1 to 100, at least one.",
						"properties": {"easy": {"type": "integer"}, "medium": {"type": "integer"}, "hard": {"type": "integer"}}},
					"tiers": {"type": "array", "items": {"type": "string", "enum": ["free", "experience", "plus", "pro"]},
						"description": "The tiers the mode answers at, each once (experience is free); default [\"plus\"]."},
					"punch_up": {"type": "boolean", "default": false, "description": "Compare against a baseline from the tier above."},
					"buckets": {"type": "object", "description": "The legacy form, instead of questions: {light, medium, hard}, each 1 to 100.",
						"properties": {"light": {"type": "integer"}, "medium": {"type": "integer"}, "hard": {"type": "integer"}}},
					"judges": {"type": "array", "items": {"type": "string", "enum": ["nova_pro", "mistral_large", "llama4_maverick"]},
						"description": "The judges, each once; default all three."},
					"judge_repeats": {"type": "integer", "minimum": 1, "maximum": 3, "default": 1, "description": "How many times each judge reads each question."},
					"judging_protocol": {"type": "string", "enum": ["pairwise", "plurality"], "default": "pairwise"},
					"dry_run": ` + dryRunSchema + `,
					"batch_id": ` + batchIDSchema + `}}`),
				OutputSchema: schema(runOutSchema),
				Annotations:  annotations{ReadOnlyHint: false, DestructiveHint: false, IdempotentHint: false, OpenWorldHint: false},
			},
			check:  pollOrLaunch("run_test", "launch a test run"),
			action: core.ActionTestsCreate,
			run:    h.runTest,
		},
		{
			desc: toolDesc{
				Name:  "certify_mode",
				Title: "Certify one of your modes",
				Description: "Certify a version of one of your organisation's own modes: a fixed test run of 150 questions " +
					"(50 light, 50 medium, 50 hard), three judges, two repeats, pairwise, ending in a verdict — certified, " +
					"provisional or not_certified — on the version; a certified version is the one you may publish with " +
					"list_mode. $50 flat, charged up front to your balance; the launch answers how long it will take (estimated_minutes). The mode must be listed in " +
					"the marketplace (its listing approved) to launch (listing_required otherwise); dry_run: true answers " +
					"the quote and requires_listing, and starts and charges nothing. The launch answers at once with " +
					"batch_id; call certify_mode again with batch_id alone to poll it until batch.status is complete (or " +
					"failed, or cancelled over REST): certification then holds the verdict. " + keyedLaunch(core.CodeCertifyLaunchLimitExceeded),
				InputSchema: schema(`{"type": "object", "properties": {
					"model": {"type": "string", "description": "One of your organisation's own modes, by id (acme-panl) or ticker (ACME:PANL); @vN certifies that version, none the latest release. Required to launch."},
					"dry_run": ` + dryRunSchema + `,
					"batch_id": ` + batchIDSchema + `}}`),
				OutputSchema: schema(runOutSchema),
				Annotations:  annotations{ReadOnlyHint: false, DestructiveHint: false, IdempotentHint: false, OpenWorldHint: false},
			},
			check:  pollOrLaunch("certify_mode", "launch a certification"),
			action: core.ActionCertifyCreate,
			run:    h.certifyMode,
		},
	}
}
