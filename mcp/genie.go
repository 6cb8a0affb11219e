package mcp

import (
	"context"
	"encoding/json"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/genie"
)

// The mode assistant's tools (core/genie; docs/genie.md), answered by the
// tool server itself, listed between validate_mode and save_mode in the
// spec's order, each once its service is served.

// assistantTools are the assistant's tools this server serves, in the
// spec's order: ask_genie, approve_quote, genie_propose_mode.
func (h *Handler) assistantTools() []*tool {
	var tools []*tool
	if h.asker != nil {
		tools = append(tools, h.askGenieTool())
	}
	if h.quotes != nil {
		tools = append(tools, h.approveQuoteTool())
	}
	if h.proposer != nil {
		tools = append(tools, h.proposeTool())
	}
	return tools
}

// askGenieTool is ask_genie.
func (h *Handler) askGenieTool() *tool {
	return &tool{
		desc: toolDesc{
			Name:  "ask_genie",
			Title: "Ask the mode assistant",
			Description: "Ask the assistant about one of your modes: its test runs and certifications, what to test next " +
				"and whether it is ready to certify. Every figure it states is one of the facts it returns beside the " +
				"answer, taken from your stored runs (W, its interval, the verdict, per-bucket figures, the gates) or " +
				"computed from them (how many more questions would narrow an interval). When it recommends a run it " +
				"attaches a quote: the run, its price and an expiry; approve_quote launches it. Or pass batch_id alone " +
				"for a run's status in words. The assistant runs on the service's own engines: asking is never billed. " +
				"It reads a mode as it stands: name it without an @lab or @vN suffix.",
			InputSchema: schema(`{"type": "object", "additionalProperties": false, "properties": {
					"mode": {"type": "string", "description": "The mode to ask about: its id or ticker, without a suffix."},
					"message": {"type": "string", "maxLength": 8192, "description": "The question about the mode."},
					"batch_id": {"type": "string", "description": "A run's batch_id: pass it alone for that run's status in words."}}}`),
			OutputSchema: schema(`{"type": "object", "required": ["answer", "facts"], "properties": {
					"answer": {"type": "string"},
					"facts": {"type": "object", "description": "Every figure the answer may state: the runs, the next test, certification readiness."},
					"quote": {"type": "object", "required": ["quote_id", "kind", "model", "price_usd", "expires_at"], "properties": {
						"quote_id": {"type": "string"}, "kind": {"type": "string", "enum": ["test", "certify"]},
						"model": {"type": "string"}, "request": {"type": "object"}, "price_usd": {"type": "number"},
						"questions": {"type": "integer"}, "estimated_minutes": {"type": "integer"},
						"status": {"type": "string"}, "expires_at": {"type": "string"}}},
					"quote_unavailable": {"type": "string", "description": "Why a recommended run has no quote: invalid_spec, mode_not_owned, chat_history_required, quote_not_stored, quote_failed, or the launch code that refused its price."},
					"regenerated": {"type": "boolean"}, "sentences_removed": {"type": "integer"}}}`),
			Annotations: annotations{ReadOnlyHint: true, DestructiveHint: false, IdempotentHint: false, OpenWorldHint: true},
		},
		selfAnswered: true,
		check:        askGenieArgs,
		action:       core.ActionTestsRead,
		run:          h.askGenie,
	}
}

// askGenieArgs refuses a call that is neither a question (mode and
// message) nor a status (batch_id alone).
func askGenieArgs(args map[string]json.RawMessage) string {
	switch {
	case present(args["batch_id"]) && !present(args["mode"]) && !present(args["message"]):
		return ""
	case present(args["mode"]) && present(args["message"]):
		return ""
	}
	return "ask_genie needs mode and message, or batch_id alone."
}

// quoteView is a quote as the assistant's tools show it.
type quoteView struct {
	ID        string          `json:"quote_id"`
	Kind      string          `json:"kind"`
	Model     string          `json:"model"`
	Request   json.RawMessage `json:"request"`
	Price     core.Dollars    `json:"price_usd"`
	Questions int             `json:"questions"`
	Minutes   int             `json:"estimated_minutes"`
	Status    string          `json:"status"`
	ExpiresAt time.Time       `json:"expires_at"`
}

func quoteViewOf(q *genie.Quote) *quoteView {
	return &quoteView{ID: q.ID, Kind: string(q.Kind), Model: q.Model, Request: q.Request, Price: core.Dollars(q.Price),
		Questions: q.Questions, Minutes: q.Minutes, Status: string(q.StatusAt(time.Now())), ExpiresAt: q.ExpiresAt.UTC()}
}

// askGenie answers ask_genie. Asking is never billed; it spends a request
// of the caller's rate like the other self-answered tools.
func (h *Handler) askGenie(ctx context.Context, p *access.Principal, c *toolCall) *toolResult {
	if err := h.access.Meter(ctx, p, c.requestID); err != nil {
		return h.selfFailure(ctx, err, c.requestID)
	}
	ans, err := h.asker.Ask(ctx, p, &genie.AskRequest{Mode: c.str("mode"), Message: c.str("message"), BatchID: c.str("batch_id")})
	if err != nil {
		return h.selfFailure(ctx, err, c.requestID)
	}
	out := struct {
		*genie.Answer
		Quote *quoteView `json:"quote,omitempty"`
	}{Answer: ans}
	if ans.Quote != nil {
		out.Quote = quoteViewOf(ans.Quote)
	}
	return structuredResult(out)
}
