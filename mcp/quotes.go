package mcp

import (
	"context"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/wire"
)

// approve_quote launches the run of a quote ask_genie attached, once, at
// no more than its price (core/genie.Quotes.Approve). It answers the run
// as run_test and certify_mode answer a launch, with the quote beside it;
// a repeat answers the same run, marked replayed as theirs are.

// approveQuoteTool is approve_quote.
func (h *Handler) approveQuoteTool() *tool {
	return &tool{
		desc: toolDesc{
			Name:  "approve_quote",
			Title: "Approve a quoted run",
			Description: "Approve a quote ask_genie attached to a recommended run (quote_id, qt_…): the run launches once, at no " +
				"more than the quoted price, charged up front to your balance, and the answer is run_test's or certify_mode's " +
				"launch answer with the quote (status launched). Only the key or sign-in the quote was made for may approve " +
				"it, before it expires (15 minutes by default). Approving a launched quote again answers the same run and " +
				"charges nothing more; after launch_failed, approve it again: it answers the run if it started and never " +
				"launches twice. A price that rose is requoted (409): nothing launches, and the new quote is in the " +
				"error's conclave block. Poll the run with run_test or certify_mode and batch_id.",
			InputSchema: schema(`{"type": "object", "additionalProperties": false, "required": ["quote_id"], "properties": {
				"quote_id": {"type": "string", "description": "The quote's id (qt_…), as ask_genie gave it."}}}`),
			OutputSchema: schema(`{"type": "object", "required": ["ok", "batch_id", "quote"], "properties": {
				"ok": {"type": "boolean"},
				"dry_run": {"type": "boolean"},
				"batch_id": {"type": "string", "description": "The run launched; poll it with run_test or certify_mode and batch_id."},
				"model": {"type": "string"}, "mode_key": {"type": "string"},
				"total_questions": {"type": "integer"}, "per_bucket": {"type": "object"},
				"billed_usd": {"type": "number", "description": "What was charged, up front: at most the quote's price_usd."},
				"estimated_minutes": {"type": "integer"}, "status_url": {"type": "string"}, "note": {"type": "string"},
				"quote": {"type": "object", "required": ["quote_id", "status"], "properties": {
					"quote_id": {"type": "string"}, "kind": {"type": "string", "enum": ["test", "certify"]},
					"model": {"type": "string"}, "request": {"type": "object"}, "price_usd": {"type": "number"},
					"questions": {"type": "integer"}, "estimated_minutes": {"type": "integer"},
					"status": {"type": "string", "enum": ["launched"]}, "expires_at": {"type": "string"}}}}}`),
			Annotations: annotations{ReadOnlyHint: false, DestructiveHint: false, IdempotentHint: true, OpenWorldHint: false},
		},
		selfAnswered: true,
		required:     []string{"quote_id"},
		action:       core.ActionTestsCreate,
		run:          h.approveQuote,
	}
}

// approvedRun is approve_quote's answer: the launch's, and the quote.
type approvedRun struct {
	*wire.Acceptance
	Quote *quoteView `json:"quote"`
}

// approveQuote answers approve_quote. It spends a request of the caller's
// rate like the other self-answered tools; the run is charged as a launch.
func (h *Handler) approveQuote(ctx context.Context, p *access.Principal, c *toolCall) *toolResult {
	if err := h.access.Meter(ctx, p, c.requestID); err != nil {
		return h.selfFailure(ctx, err, c.requestID)
	}
	acc, q, err := h.quotes.Approve(ctx, p, c.str("quote_id"))
	if err != nil {
		e := core.AsError(err)
		if e.Code == core.CodeRequoted && q != nil {
			e = e.WithDetail("quote", quoteViewOf(q))
		}
		return h.selfFailure(ctx, e, c.requestID)
	}
	r := structuredResult(approvedRun{Acceptance: wire.AcceptanceOf(acc), Quote: quoteViewOf(q)})
	if acc.Replayed && !r.IsError {
		r.Meta = map[string]any{metaReplayed: true}
	}
	return r
}
