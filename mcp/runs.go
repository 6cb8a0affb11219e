package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/bench/runs"
	"github.com/conclavehq/conclave/core/calls"
	"github.com/conclavehq/conclave/core/wire"
)

// run_test and certify_mode forward to the benchmark run service
// (core/bench/runs), as POST and GET /v1/tests and /v1/certify do: a call
// with model launches (or, with dry_run, quotes) and answers the REST
// acceptance; a call with batch_id alone polls and answers the REST
// {ok, batch}. Unlike the other forwarding tools they refuse a call that
// is neither with -32602 (the spec's "Tool behaviour"), since which
// endpoint the call stands for is the tool server's to decide.

// Arguments of the two tools: a launch's (the REST body's fields) and the
// poll's.
var (
	testArgs    = []string{"model", "questions", "tiers", "punch_up", "buckets", "judges", "judge_repeats", "judging_protocol", "dry_run"}
	certifyArgs = []string{"model", "dry_run"}
)

// pollOrLaunch is the -32602 check of run_test and certify_mode: batch_id
// alone polls; otherwise model is required.
func pollOrLaunch(name, launch string) func(args map[string]json.RawMessage) string {
	return func(args map[string]json.RawMessage) string {
		if present(args["batch_id"]) {
			var others []string
			for _, arg := range slices.Sorted(maps.Keys(args)) {
				if arg != "batch_id" && present(args[arg]) {
					others = append(others, arg)
				}
			}
			if len(others) > 0 {
				return fmt.Sprintf("%s polls a batch with batch_id alone; leave out %s, or leave out batch_id to %s.",
					name, strings.Join(others, ", "), launch)
			}
			return ""
		}
		if !present(args["model"]) {
			return fmt.Sprintf("%s needs model to %s, or batch_id alone to poll a batch it launched.", name, launch)
		}
		return ""
	}
}

// runTest launches a test run, as POST /v1/tests, or polls one, as GET
// /v1/tests.
func (h *Handler) runTest(ctx context.Context, p *access.Principal, c *toolCall) *toolResult {
	if present(c.args["batch_id"]) {
		return h.pollBatch(ctx, p, c, runs.KindTest)
	}
	key, err := h.admitLaunch(ctx, p, c, core.ActionTestsCreate, testArgs)
	if err != nil {
		return h.forwardFailure(ctx, err, c.requestID)
	}
	a := c.args
	acc, err := h.runs.Test(ctx, p, key, &runs.TestRequest{
		Model: a["model"], Buckets: a["buckets"], Questions: a["questions"], Tiers: a["tiers"], PunchUp: a["punch_up"],
		Judges: a["judges"], JudgeRepeats: a["judge_repeats"], JudgingProtocol: a["judging_protocol"], DryRun: a["dry_run"],
	})
	if err != nil {
		return h.forwardFailure(ctx, err, c.requestID)
	}
	return acceptanceResult(acc)
}

// certifyMode launches a certification, as POST /v1/certify, or polls one,
// as GET /v1/certify.
func (h *Handler) certifyMode(ctx context.Context, p *access.Principal, c *toolCall) *toolResult {
	if present(c.args["batch_id"]) {
		return h.pollBatch(ctx, p, c, runs.KindCertify)
	}
	key, err := h.admitLaunch(ctx, p, c, core.ActionCertifyCreate, certifyArgs)
	if err != nil {
		return h.forwardFailure(ctx, err, c.requestID)
	}
	acc, err := h.runs.Certify(ctx, p, key, &runs.CertifyRequest{Model: c.args["model"], DryRun: c.args["dry_run"]})
	if err != nil {
		return h.forwardFailure(ctx, err, c.requestID)
	}
	return acceptanceResult(acc)
}

// admitLaunch admits a launch in REST's order — the scope, one request of
// the key's rate, the Idempotency-Key, a closed body — and answers how it
// is keyed: by the key in _meta when the call sends one, else by itself,
// so that a client's retry of the same call is the same launch.
func (h *Handler) admitLaunch(ctx context.Context, p *access.Principal, c *toolCall, action string, takes []string) (runs.Key, error) {
	if err := h.admit(ctx, p, c, action); err != nil {
		return runs.Key{}, err
	}
	key := runs.Key{Derive: true}
	if c.meta.IdempotencyKey != nil {
		key = runs.Key{Value: *c.meta.IdempotencyKey}
		if err := calls.CheckIdempotencyKey(key.Value); err != nil {
			return runs.Key{}, err
		}
	}
	for _, arg := range slices.Sorted(maps.Keys(c.args)) {
		if !slices.Contains(takes, arg) {
			return runs.Key{}, core.Errorf(core.CodeInvalidRequest, "%s takes no argument %q. A launch takes only %s; a poll takes batch_id alone.",
				c.name, arg, strings.Join(takes, ", ")).WithParam(arg)
		}
	}
	return key, nil
}

// pollBatch reads one of the organisation's batches of kind, as GET
// /v1/tests and GET /v1/certify.
func (h *Handler) pollBatch(ctx context.Context, p *access.Principal, c *toolCall, kind runs.Kind) *toolResult {
	if err := h.admit(ctx, p, c, readAction(kind)); err != nil {
		return h.forwardFailure(ctx, err, c.requestID)
	}
	var id string
	if json.Unmarshal(c.args["batch_id"], &id) != nil {
		return h.forwardFailure(ctx, core.Errorf(core.CodeInvalidRequest, "batch_id must be a string: the batch_id its launch answered.").
			WithParam("batch_id"), c.requestID)
	}
	b, err := h.runs.Batch(ctx, p, kind, id)
	if err != nil {
		return h.forwardFailure(ctx, err, c.requestID)
	}
	return structuredResult(wire.BatchAnswerOf(b))
}

func readAction(kind runs.Kind) string {
	if kind == runs.KindCertify {
		return core.ActionCertifyRead
	}
	return core.ActionTestsRead
}

// acceptanceResult is a launch's answer. A repeat of a launch answers the
// batch launched before and says so in the result's _meta, where REST has
// the header Idempotent-Replayed.
func acceptanceResult(acc *runs.Acceptance) *toolResult {
	r := structuredResult(wire.AcceptanceOf(acc))
	if acc.Replayed && !r.IsError {
		r.Meta = map[string]any{metaReplayed: true}
	}
	return r
}

// metaReplayed marks, in a result's _meta, a launch's answer that is a
// repeat's.
const metaReplayed = "conclave/idempotent-replayed"
