package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/calls"
	"github.com/conclavehq/conclave/core/wire"
)

// The forwarding tools call the core service of their REST endpoint, in the
// endpoint's order — scope, arguments, the call — so that every refusal is
// the REST one, and answer the endpoint's JSON. A failure is a result with
// isError and the forwarding shape.

// forwardFailure renders a forwarding tool's failure, logging the cause of
// a 5xx (which is never sent), as REST's writeError does.
func (h *Handler) forwardFailure(ctx context.Context, err error, requestID string) *toolResult {
	var e *core.Error
	if errors.As(err, &e) {
		h.logFailure(ctx, e, requestID)
	} else if ctx.Err() == nil {
		h.log.ErrorContext(ctx, "mcp tool call failed", slog.String("request_id", requestID), slog.String("error", err.Error()))
	}
	return forwardedFailure(err, requestID)
}

// callOf names a tool call to the call service.
func callOf(c *toolCall) calls.Call {
	return calls.Call{RequestID: c.requestID, Endpoint: "mcp:" + c.name, Progress: c.progress}
}

// deliberate runs a billed deliberation, as POST /v1/chat/completions.
// Without an explicit key in _meta the call's idempotency key is derived as
// REST derives it, so a retry with the same arguments is the same call.
func (h *Handler) deliberate(ctx context.Context, p *access.Principal, c *toolCall) *toolResult {
	if err := h.access.Authorize(ctx, p, core.ActionChatCreate, nil, ""); err != nil {
		return h.forwardFailure(ctx, err, c.requestID)
	}
	in := calls.ChatInput{Model: c.args["model"], Messages: c.args["messages"], Tier: c.args["tier"]}
	if raw := c.args["max_cost_usd"]; present(raw) {
		in.Panel = json.RawMessage(`{"max_cost_usd":` + string(raw) + `}`)
	}
	req, err := calls.ParseChat(&in)
	if err == nil && c.meta.IdempotencyKey != nil {
		req.IdempotencyKey = *c.meta.IdempotencyKey
		err = calls.CheckIdempotencyKey(req.IdempotencyKey)
	}
	if err != nil {
		return h.forwardFailure(ctx, h.access.Refused(ctx, p, c.requestID, err), c.requestID)
	}
	res, err := h.calls.Chat(ctx, p, callOf(c), req)
	switch {
	case err != nil:
		// A caller that left gets nothing; its deliberation goes on, is
		// billed once and stored, and a retry replays it.
		return h.forwardFailure(ctx, err, c.requestID)
	case res.Replay != nil:
		return structuredResult(wire.ReplayOf(res.Replay))
	}
	return structuredResult(wire.CompletionOf(res.Completion))
}

// estimate classifies a question and quotes it, as POST /v1/estimate.
func (h *Handler) estimate(ctx context.Context, p *access.Principal, c *toolCall) *toolResult {
	if err := h.access.Authorize(ctx, p, core.ActionEstimate, nil, ""); err != nil {
		return h.forwardFailure(ctx, err, c.requestID)
	}
	req, err := calls.ParseEstimate(&calls.EstimateInput{Model: c.args["model"], Messages: c.args["messages"]})
	if err != nil {
		return h.forwardFailure(ctx, h.access.Refused(ctx, p, c.requestID, err), c.requestID)
	}
	e, err := h.calls.Estimate(ctx, p, callOf(c), req)
	if err != nil {
		return h.forwardFailure(ctx, err, c.requestID)
	}
	return structuredResult(wire.EstimateOf(e, req.Model))
}

// admit is the admission of a request whose REST route meters it (a read,
// a launch): the scope, then one request of the key's rate.
func (h *Handler) admit(ctx context.Context, p *access.Principal, c *toolCall, action string) error {
	if err := h.access.Authorize(ctx, p, action, nil, ""); err != nil {
		return err
	}
	return h.access.Meter(ctx, p, c.requestID)
}

// listModes lists the modes the key may call, as GET /v1/models.
func (h *Handler) listModes(ctx context.Context, p *access.Principal, c *toolCall) *toolResult {
	if err := h.admit(ctx, p, c, core.ActionModelsRead); err != nil {
		return h.forwardFailure(ctx, err, c.requestID)
	}
	views, err := h.calls.ListModes(ctx, p)
	if err != nil {
		return h.forwardFailure(ctx, err, c.requestID)
	}
	return structuredResult(wire.ModelListOf(views, h.started.Unix()))
}

// getReceipt reads a call's receipt, as GET /v1/receipts/{request_id}.
func (h *Handler) getReceipt(ctx context.Context, p *access.Principal, c *toolCall) *toolResult {
	if err := h.admit(ctx, p, c, core.ActionReceiptsRead); err != nil {
		return h.forwardFailure(ctx, err, c.requestID)
	}
	var id string
	if raw := c.args["request_id"]; present(raw) && json.Unmarshal(raw, &id) != nil {
		return h.forwardFailure(ctx, core.Errorf(core.CodeInvalidRequest, "request_id must be a string: panel.request_id of the call.").
			WithParam("request_id"), c.requestID)
	}
	if id = strings.TrimSpace(id); id == "" {
		return h.forwardFailure(ctx, core.Errorf(core.CodeMissingRequestID, "Name the call: pass request_id, the panel.request_id of its answer.").
			WithParam("request_id"), c.requestID)
	}
	var transcript bool
	if raw := c.args["include_transcript"]; present(raw) && json.Unmarshal(raw, &transcript) != nil {
		return h.forwardFailure(ctx, core.Errorf(core.CodeInvalidRequest, "include_transcript must be true or false.").
			WithParam("include_transcript"), c.requestID)
	}
	a, err := h.calls.Receipt(ctx, p, id)
	if err != nil {
		return h.forwardFailure(ctx, err, c.requestID)
	}
	return structuredResult(wire.ReceiptOf(a, transcript))
}

// selfFailure renders a self-answered tool's failure, logging the cause of
// a 5xx (which is never sent).
func (h *Handler) selfFailure(ctx context.Context, err error, requestID string) *toolResult {
	h.logFailure(ctx, core.AsError(err), requestID)
	return selfAnsweredFailure(err)
}

// listEngines is the self-answered list of the engines that can fill
// seats, up to the caller's allowed tier.
func (h *Handler) listEngines(ctx context.Context, p *access.Principal, c *toolCall) *toolResult {
	if err := h.access.Meter(ctx, p, c.requestID); err != nil {
		return h.selfFailure(ctx, err, c.requestID)
	}
	list, err := h.calls.ListEngines(ctx, p)
	if err != nil {
		return h.selfFailure(ctx, err, c.requestID)
	}
	out := engineList{Tier: list.Tier, Engines: []engineEntry{}}
	for _, e := range list.Engines {
		out.Engines = append(out.Engines, engineEntry{ID: e.ID, Family: e.Family, MaxTier: e.MaxTier, Tiers: e.Tiers})
	}
	return structuredResult(out)
}

// engineList is list_engines' result.
type engineList struct {
	// Tier is the highest tier the caller may ask for.
	Tier    core.Tier     `json:"tier"`
	Engines []engineEntry `json:"engines"`
}

type engineEntry struct {
	ID      string      `json:"id"`
	Family  string      `json:"family"`
	MaxTier core.Tier   `json:"max_tier"`
	Tiers   []core.Tier `json:"tiers"`
}
