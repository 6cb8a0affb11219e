package calls

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/deliberate"
	"github.com/conclavehq/conclave/core/telemetry"
)

// Receipt statuses Conclave records.
const (
	statusSucceeded = "succeeded"
	statusCapped    = "capped"
)

// Call names one request to the service: its id, which becomes the
// receipt's, and the route it came in on, kept with its outcome.
type Call struct {
	RequestID string
	// Endpoint is the route the call came in on ("/v1/chat/completions",
	// "mcp:deliberate"), recorded with an outcome that has no receipt.
	Endpoint string
	// Progress, when set, is told each step a chat completion's
	// deliberation reaches, as deliberate.Request.Observe is: quickly,
	// without blocking, from the deliberation's goroutines — and on after
	// the caller has left, since the deliberation goes on. It is an
	// observer only: what runs and what is billed do not depend on it.
	// Defaults to nil.
	Progress func(Progress)
}

// Progress is a step of a deliberation, reported to Call.Progress.
type Progress = deliberate.Progress

// ChatResult is what Chat answers: a fresh completion, or the stored one
// replayed for a repeat of its idempotency key.
type ChatResult struct {
	Completion *Completion
	Replay     *Replay
}

// Chat runs a billed deliberation for p. Refusals are *core.Error with the
// spec's code. Once admitted, the deliberation runs to its end even if ctx
// ends first — the caller left — in which case Chat returns ctx.Err() at
// once and the call is still billed once and stored, so that a repeat with
// the same idempotency key gets the replay. A repeat that finds the call
// still running in this process waits for it up to Config.RepeatWait; one
// that finds it running past that, or on another replica, gets
// request_in_progress with the expected remaining time as its RetryAfter.
func (s *Service) Chat(ctx context.Context, p *access.Principal, c Call, req *ChatParams) (*ChatResult, error) {
	start := time.Now()
	if s.d.Deliberator == nil {
		return nil, core.Errorf(core.CodeServiceUnavailable, "This server runs no deliberations.")
	}
	if err := s.taking(); err != nil {
		return nil, err
	}
	mode, err := s.ResolveMode(ctx, p, req.Model, core.ActionChatCreate, req.Tier)
	if err != nil {
		return nil, s.d.Access.Refused(ctx, p, c.RequestID, err)
	}
	if err := s.checkInput(ctx, p, req.Messages); err != nil {
		if ctx.Err() != nil {
			return nil, err // the caller left while its prompt was counted
		}
		return nil, s.d.Access.Refused(ctx, p, c.RequestID, err)
	}
	idemKey := req.IdempotencyKey
	if idemKey != "" {
		if err := CheckIdempotencyKey(idemKey); err != nil {
			return nil, s.d.Access.Refused(ctx, p, c.RequestID, err)
		}
	} else if idemKey, err = derivedKey(p.Org.ID, p.RateID(), req.Model, req.Messages); err != nil {
		return nil, err
	}
	ceiling := s.callCeiling(p, mode, req)
	ap := &core.AdmitParams{IdempotencyKey: idemKey, RequestHash: keyedHash(p.RateID(), req.RequestHash),
		Hold: core.PlaceHoldParams{Amount: ceiling, MonthlyQuota: p.Org.MonthlyQuota}}
	if !p.Org.Verified() {
		ap.Hold.ActivationAllowance = s.cfg.ActivationAllowance
	}
	if p.OnPlan() {
		s.planAdmission(p, ap)
	}
	actx, aspan := s.d.Telemetry.Start(ctx, "conclave.admit", trace.SpanKindInternal)
	adm, err := s.admitOrAwait(actx, p, c, ap, req)
	endSpan(aspan, err)
	if err != nil {
		return nil, err
	}
	if adm.Refused != nil { // another call holds the key
		return s.repeat(ctx, p, mode, adm.Claim, req)
	}
	run := &chatRun{s: s, p: p, c: c, req: req, mode: mode, ceiling: ceiling, asked: ceiling, idemKey: idemKey, hold: adm.Hold, start: start}
	if p.OnPlan() {
		// The person's allowance may have lowered the hold: it is the
		// call's ceiling.
		run.ceiling = adm.Hold.Amount
	}
	rctx, cancel, err := s.begin(c.RequestID)
	if err != nil {
		run.giveBack(ctx)
		return nil, err
	}
	// The deliberation runs on the caller's goroutine, under rctx, which
	// the caller's leaving does not end: a caller that leaves does not stop
	// it (its end is billed and stored, and a retry replays it), and no
	// second goroutine waits beside it for the caller — one stack fewer per
	// deliberation in flight. A caller that left gets its context's error.
	defer s.end(c.RequestID)
	defer cancel()
	rctx, wspan := s.workflowSpan(ctx, rctx, run)
	res, err := s.runGuarded(rctx, run)
	endSpan(wspan, err)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return res, err
}

// workflowSpan starts the deliberation's span, invoke_workflow {mode},
// under the caller's span (in ctx) on the deliberation's own context rctx.
func (s *Service) workflowSpan(ctx, rctx context.Context, run *chatRun) (context.Context, trace.Span) {
	tel := s.d.Telemetry
	if !tel.On {
		return rctx, trace.SpanFromContext(rctx)
	}
	rctx = trace.ContextWithSpan(rctx, trace.SpanFromContext(ctx))
	attrs := []attribute.KeyValue{telemetry.RequestID.String(run.c.RequestID)}
	if tel.GenAI {
		attrs = append(attrs, semconv.GenAIOperationNameInvokeWorkflow, semconv.GenAIWorkflowName(run.mode.ID))
	}
	if tel.CaptureContent && tel.GenAI {
		roles, texts := make([]string, len(run.req.Messages)), make([]string, len(run.req.Messages))
		for i, m := range run.req.Messages {
			roles[i], texts[i] = m.Role, m.Content
		}
		attrs = append(attrs, semconv.GenAIInputMessagesKey.String(telemetry.InputMessages(roles, texts)))
	}
	return tel.Start(rctx, "invoke_workflow "+run.mode.ID, trace.SpanKindInternal, attrs...)
}

// endSpan ends span, with err's code as its error.type and an error status
// when there is one.
func endSpan(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		code := string(core.CodeInternalError)
		var ce *core.Error
		if errors.As(err, &ce) {
			code = string(ce.Code)
		}
		span.SetAttributes(semconv.ErrorTypeKey.String(code))
		span.SetStatus(codes.Error, code)
	}
	span.End()
}

// runGuarded runs a deliberation: a fault in it fails its call, not the
// process (run's own deferral has given back what the call held).
func (s *Service) runGuarded(ctx context.Context, run *chatRun) (res *ChatResult, err error) {
	defer func() {
		if v := recover(); v != nil {
			s.log.ErrorContext(ctx, "panic in a deliberation", slog.String("request_id", run.c.RequestID), slog.Any("panic", v))
			res, err = nil, core.Errorf(core.CodeInternalError, "The service failed to complete the request; nothing was billed. Retry with the same Idempotency-Key.")
		}
	}()
	return run.run(ctx)
}

// checkInput refuses messages over the key's input limit (the deployment's
// for a key that sets none, and for a person acting without a key). A
// count cut short by ctx (the caller left) returns ctx's error.
func (s *Service) checkInput(ctx context.Context, p *access.Principal, messages []core.Message) error {
	limit := 0
	if p.Key != nil {
		limit = p.Key.MaxInputTokens
	}
	if limit == 0 {
		limit = s.cfg.MaxInputTokens
	}
	n, over, err := s.d.TokensOver(ctx, messages, limit)
	if err != nil {
		return err
	}
	if over {
		return core.Errorf(core.CodeContextLengthExceeded, "The prompt has at least %d tokens, over this key's limit of %d input tokens.", n, limit).WithParam("messages")
	}
	return nil
}

// admit runs the call's admission in one trip to the store (see
// core.Admission.Admit) with the key's rate and the organisation's slot limit
// filled in. A refusal is returned as the spec's error, except that a call
// whose idempotency key another call holds is returned admitted with
// Refused set to core.ErrClaimed. An admitted call holds a slot whose
// lease this process keeps until release.
func (s *Service) admit(ctx context.Context, p *access.Principal, c Call, ap *core.AdmitParams) (*core.AdmitResult, error) {
	if err := s.d.Access.Spent(p); err != nil {
		return nil, err
	}
	ap.KeyID, ap.OrgID, ap.RequestID, ap.Lease = p.RateID(), p.Org.ID, c.RequestID, s.cfg.Lease
	ap.PerMinute = s.d.Access.RPM(p)
	ap.SlotLimit = s.d.Access.SlotLimit(p)
	return s.tryAdmit(ctx, p, c, ap)
}

// tryAdmit is admit with ap as given.
func (s *Service) tryAdmit(ctx context.Context, p *access.Principal, c Call, ap *core.AdmitParams) (*core.AdmitResult, error) {
	adm, err := s.d.Admission.Admit(ctx, ap)
	if err != nil {
		return nil, core.Errorf(core.CodeServiceUnavailable, "The call's limits could not be checked; it was refused and nothing was billed. Retry shortly.").WithCause(err)
	}
	switch {
	case adm.Refused == nil:
		s.leases.add(c.RequestID)
		return adm, nil
	case errors.Is(adm.Refused, core.ErrClaimed):
		return adm, nil
	case errors.Is(adm.Refused, core.ErrRateLimited):
		return nil, s.d.Access.RateLimited(p, adm.RetryAfter)
	case errors.Is(adm.Refused, core.ErrNoSlot):
		e := core.Errorf(core.CodeConcurrencyLimitExceeded, "This organisation already has %d calls in flight, its limit. Retry after the time in Retry-After.", ap.SlotLimit)
		e.RetryAfter = s.cfg.ConcurrencyRetryAfter
		return nil, e
	case errors.Is(adm.Refused, core.ErrPersonBusy):
		return nil, core.PersonBusy(s.d.Access.Plan(p), s.cfg.ConcurrencyRetryAfter)
	}
	e := holdError(adm.Refused, ap.Hold.Amount)
	if errors.Is(adm.Refused, core.ErrPlanLimit) {
		e = core.PlanLimitReached(s.d.Access.Plan(p), adm.PersonSpent, time.Now())
	}
	s.recordOutcome(ctx, p, c, core.OutcomeRefused, "the call was refused before any seat fired ("+string(e.Code)+"); nothing was billed")
	return nil, e
}

// releaseSlot stops renewing the call's slot and frees it.
func (s *Service) releaseSlot(ctx context.Context, orgID, requestID string) {
	s.leases.remove(requestID)
	if err := s.d.Admission.ReleaseSlot(context.WithoutCancel(ctx), orgID, requestID); err != nil {
		// The lease lapses by itself; the slot is free again then.
		s.log.WarnContext(ctx, "releasing a concurrency slot", slog.String("request_id", requestID), slog.String("error", err.Error()))
	}
}

// holdError maps a refused hold to the spec's code.
func holdError(err error, ceiling core.Micros) *core.Error {
	switch {
	case errors.Is(err, core.ErrNoBilling):
		return core.Errorf(core.CodeNoBillingConfigured, "This organisation has no billing set up: its trial credit has ended and no prepaid balance was added. Add funds to continue.")
	case errors.Is(err, core.ErrInsufficientFunds):
		return core.Errorf(core.CodeInsufficientBalance, "The balance cannot cover this call's ceiling of $%s. Add funds or lower panel.max_cost_usd.", ceiling)
	case errors.Is(err, core.ErrQuotaExceeded):
		return core.Errorf(core.CodeQuotaExceeded, "This call's ceiling of $%s would pass the organisation's monthly spend quota.", ceiling)
	case errors.Is(err, core.ErrVerificationRequired):
		return core.Errorf(core.CodeVerificationRequired, "This organisation is not verified and has used its activation allowance. Verify the organisation to continue.")
	}
	return core.Errorf(core.CodeServiceUnavailable, "The balance could not be checked; nothing was billed. Retry shortly.").WithCause(err)
}

// chatRun is one admitted chat completion: it holds a slot, an idempotency
// claim and a hold until it settles or gives them back.
type chatRun struct {
	s       *Service
	p       *access.Principal
	c       Call
	req     *ChatParams
	mode    *core.Mode
	ceiling core.Micros
	// asked is the ceiling asked for; ceiling is less when a person's
	// allowance lowered the hold of plan usage.
	asked   core.Micros
	idemKey string
	hold    *core.Hold
	start   time.Time
}

// giveBack returns what an unsettled call holds: the hold (not billed), the
// claim (a retry with the same key runs) and the slot.
func (r *chatRun) giveBack(ctx context.Context) {
	s, ctx := r.s, context.WithoutCancel(ctx)
	if err := s.d.Settlement.ReleaseHold(ctx, r.hold.ID, r.p.Org.ID); err != nil {
		s.log.ErrorContext(ctx, "releasing a hold", slog.String("request_id", r.c.RequestID), slog.String("error", err.Error()))
	}
	if err := s.d.Admission.ReleaseClaim(ctx, r.p.Org.ID, r.idemKey, r.c.RequestID); err != nil {
		s.log.ErrorContext(ctx, "releasing an idempotency claim", slog.String("request_id", r.c.RequestID), slog.String("error", err.Error()))
	}
	s.releaseSlot(ctx, r.p.Org.ID, r.c.RequestID)
}

// run deliberates, bills and settles. ctx is the service's, not the
// caller's: it ends only at the deliberation deadline or when the service
// stops.
func (r *chatRun) run(ctx context.Context) (*ChatResult, error) {
	s := r.s
	settled := false
	defer func() {
		if !settled {
			r.giveBack(ctx)
		}
	}()
	plan, err := s.d.Deliberator.Plan(ctx, &deliberate.Request{
		Mode: r.mode, Tier: r.req.Tier, Messages: r.req.Messages, OrgID: r.p.Org.ID, RequestID: r.c.RequestID,
		Observe: r.c.Progress,
	})
	if err != nil {
		return nil, r.failed(ctx, err)
	}
	// The call's ceiling budgets the deliberation: what is left of it after
	// the surcharge and the fee, in real token cost, bounds the rounds (at
	// real cost, plan usage, the whole ceiling does). A ceiling that cannot
	// buy what the question needs at all is refused before any seat fires.
	realCost := r.p.OnPlan()
	sur := r.mode.Pricing.SurchargeFor(plan.Classification.Depth, plan.Lane == core.LaneExpress)
	billing := core.BillInput{Surcharge: sur, Ceiling: r.ceiling, RealCost: realCost}
	if need := billing.CeilingFor(plan.MinCost); r.ceiling < need {
		s.recordOutcome(ctx, r.p, r.c, core.OutcomeRefused, "the call's ceiling was below what the mode needs for the question; no seat fired and nothing was billed")
		if realCost {
			byMaxCost := r.req.MaxCost != nil && *r.req.MaxCost == r.asked
			return nil, planBelowMinimum(s.d.Access.Plan(r.p), r.mode, r.ceiling, r.asked, need, byMaxCost)
		}
		return nil, belowMinimum(r.mode, plan, r.ceiling, need, sur)
	}
	plan.Request.Budget = billing.Budget()
	res, err := s.d.Deliberator.Execute(ctx, plan)
	if err != nil {
		return nil, r.failed(ctx, err)
	}
	out, done, err := r.settle(ctx, res, billing)
	settled = done
	return out, err
}

// settle bills the deliberation's result and stores its receipt and
// answer in one settlement; settled says whether what the call holds is no
// longer to be given back (billed, or perhaps billed). It is apart from
// run, whose frame stays on the stack while the deliberation's calls wait.
func (r *chatRun) settle(ctx context.Context, res *deliberate.Result, billing core.BillInput) (out *ChatResult, settled bool, err error) {
	s := r.s
	billing.Calls, billing.Surcharge = billedCalls(res), surcharge(r.mode, res)
	bill := core.ComputeBill(billing)
	created, completed, latency := callTimes(r.start)
	hash := s.d.Modes.ModeConfigHash(r.mode)
	comp := completionOf(r.mode, hash, res, bill, r.ceiling, r.c.RequestID, latency.Milliseconds())
	receipt := receiptFor(r.mode, hash, res, bill, billing, r.p.Org.ID, latency.Milliseconds(), completed)
	receipt.CreatedAt, receipt.RequestID = created, r.c.RequestID
	receipt.PayerKind, receipt.PersonID = r.p.PrincipalKind(), r.p.PersonID()
	if r.p.Key != nil {
		receipt.KeyID = r.p.Key.ID
	}
	// The stored answer and the one returned are the same: persisted is
	// true in both, since the answer is returned only once the settlement
	// that stores it has committed.
	comp.Panel.Persisted = true
	raw, err := encodeStored(comp)
	if err != nil {
		return nil, false, core.Errorf(core.CodeInternalError, "The answer could not be encoded; nothing was billed.").WithCause(err)
	}
	receipt.Response = raw
	claimState := core.ClaimSucceeded
	if bill.Capped {
		claimState = core.ClaimCapped
	}
	receipt.TraceID = telemetry.TraceID(ctx)
	r.traceDeliberation(ctx, res, bill)
	sctx, sspan := s.d.Telemetry.Start(context.WithoutCancel(ctx), "conclave.settle", trace.SpanKindInternal)
	_, err = s.d.Settlement.SettleCall(sctx, &core.SettleCallParams{
		HoldID: r.hold.ID, OrgID: r.p.Org.ID, Billed: bill.Billed, Receipt: receipt, IdempotencyKey: r.idemKey, ClaimState: claimState,
	})
	endSpan(sspan, err)
	s.leases.remove(r.c.RequestID)
	if err != nil {
		if errors.Is(err, core.ErrOutcomeUnknown) {
			// Perhaps billed: a retry with the same key replays the answer if
			// it was, and runs again (billed once) if not. Its leases lapse.
			return nil, true, core.Errorf(core.CodeInternalError, "The deliberation's bill could not be confirmed. Retry with the same Idempotency-Key: you receive its answer if it was billed, and it is never billed twice.").WithCause(err)
		}
		s.recordOutcome(ctx, r.p, r.c, core.OutcomeFailed, "the deliberation could not be recorded; nothing was billed")
		return nil, false, core.Errorf(core.CodeCostUnreadable, "The deliberation could not be recorded; nothing was billed. Retry.").WithCause(err)
	}
	s.latency.add(r.mode.ID, latency)
	return &ChatResult{Completion: comp}, true, nil // the settlement freed the slot in its transaction
}

// callTimes are the receipt times of a call that began at start and ends
// now, as PostgreSQL keeps them (to the microsecond), and the latency
// between them: completed_at − created_at is then latency_ms exactly,
// whatever the rounding.
func callTimes(start time.Time) (created, completed time.Time, latency time.Duration) {
	created, completed = start.Round(time.Microsecond), time.Now().Round(time.Microsecond)
	return created, completed, completed.Sub(created)
}

// traceDeliberation puts what the deliberation did on its span: the lane,
// depth, rounds and finish, what it cost and was billed, and one span per
// provider call from the record of each attempt.
func (r *chatRun) traceDeliberation(ctx context.Context, res *deliberate.Result, bill core.Bill) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	var real core.Micros
	source := core.SourceService
	used := map[string]bool{}
	calls := make([]telemetry.ProviderCall, len(res.Calls))
	for i, c := range res.Calls {
		real += c.Cost
		if core.IsBYOKSource(c.Source) {
			source = "byok"
		}
		calls[i] = telemetry.ProviderCall{Role: c.Role, Seat: c.Seat, Round: c.Round, Engine: c.Engine, Original: c.Original,
			Fallback: c.Fallback, Hedged: c.Hedged || c.Role == deliberate.RoleHedge, Finish: c.Finish,
			InputTokens: c.InputTokens, OutputTokens: c.OutputTokens, CostUSD: c.Cost.Float(),
			Source: cmp.Or(c.Source, core.SourceService), Started: c.Started, Ended: c.Ended, Content: c.Content}
		calls[i].Attempt, calls[i].ErrorClass = attemptOf(c, res, used)
	}
	span.SetAttributes(telemetry.Lane.String(string(res.Lane)), telemetry.Depth.String(string(res.Classification.Depth)),
		telemetry.Rounds.Int(len(res.Rounds)), telemetry.Converged.Bool(res.Converged != nil && *res.Converged), telemetry.Capped.Bool(bill.Capped),
		telemetry.FinishReason.String(res.Finish), telemetry.CostRealUSD.Float64(real.Float()),
		telemetry.CostBilled.Float64(bill.Billed.Float()), telemetry.Source.String(source))
	tel := r.s.d.Telemetry
	if tel.CaptureContent && tel.GenAI {
		span.SetAttributes(semconv.GenAIOutputMessagesKey.String(telemetry.OutputMessages(res.Answer, res.Finish)))
	}
	tel.RecordCalls(ctx, calls)
}

// failed answers a deliberation that ended without an answer to bill.
func (r *chatRun) failed(ctx context.Context, err error) error {
	s := r.s
	switch {
	case errors.Is(err, deliberate.ErrModeUnavailable):
		s.recordOutcome(ctx, r.p, r.c, core.OutcomeFailed, "no seat of the mode could run; nothing was billed")
		return core.Errorf(core.CodeModeUnavailable, "No seat of this mode could run; nothing was billed. Retry shortly.").WithCause(err)
	case ctx.Err() != nil:
		s.recordOutcome(ctx, r.p, r.c, core.OutcomeFailed, "the deliberation was stopped before it ended (its deadline passed or the server stopped); nothing was billed")
		return core.Errorf(core.CodeServiceUnavailable, "The deliberation was stopped before it ended (its deadline passed or the server stopped); nothing was billed. Retry with the same request.").WithCause(err)
	}
	s.recordOutcome(ctx, r.p, r.c, core.OutcomeFailed, "the deliberation failed; nothing was billed")
	return core.Errorf(core.CodeUpstreamProviderError, "The deliberation failed; nothing was billed. Retry with the same request.").WithCause(err)
}

// belowMinimum refuses a call whose ceiling cannot pay for the least the
// mode does with its question.
func belowMinimum(mode *core.Mode, plan *deliberate.Plan, ceiling, need, sur core.Micros) *core.Error {
	what := fmt.Sprintf("its $%s surcharge for a %s question plus one round of its panel", sur, plan.Classification.Depth)
	if plan.Lane == core.LaneExpress {
		what = fmt.Sprintf("its $%s express price", sur)
	}
	return core.Errorf(core.CodeInvalidMaxCostUSD,
		"This call's ceiling of $%s is below what %s needs for this question: at least $%s (%s). Raise panel.max_cost_usd (or the key's ceiling); no seat fired and nothing was billed.",
		ceiling, mode.ID, need, what).WithParam("panel.max_cost_usd")
}

// surcharge is the mode's surcharge for the call: its express price on the
// express lane when it has one, else the price for the classified depth.
func surcharge(mode *core.Mode, res *deliberate.Result) core.Micros {
	return mode.Pricing.SurchargeFor(res.Classification.Depth, res.Lane == core.LaneExpress)
}

// billedCalls lists every call's source cost and whether it ran on the
// organisation's own key (no token charge, the lower fee).
func billedCalls(res *deliberate.Result) []core.BilledCall {
	out := make([]core.BilledCall, len(res.Calls))
	for i, c := range res.Calls {
		out[i] = core.BilledCall{RealCost: c.Cost, BYOK: core.IsBYOKSource(c.Source)}
	}
	return out
}

// completionOf is the answer to a settled call.
func completionOf(mode *core.Mode, hash string, res *deliberate.Result, bill core.Bill, ceiling core.Micros, requestID string, latency int64) *Completion {
	subs := res.Substitutions
	if subs == nil {
		subs = []deliberate.Substitution{}
	}
	engines := res.Engines
	if engines == nil {
		engines = []string{}
	}
	var version *int
	if mode.Version > 0 {
		v := mode.Version
		version = &v
	}
	return &Completion{
		ID: "chatcmpl-" + strings.TrimPrefix(requestID, "req_"), Created: time.Now().Unix(), Model: mode.ID,
		Answer: res.Answer, FinishReason: res.Finish,
		Usage: Usage{PromptTokens: res.Usage.PromptTokens, CompletionTokens: res.Usage.CompletionTokens, ReasoningTokens: res.Usage.ReasoningTokens},
		Panel: Panel{
			RequestID: requestID, Mode: mode.ID, ModeKey: mode.Key, ModeConfigHash: hash, ModeVersion: version, Lane: res.Lane,
			Rounds: len(res.Rounds), Seats: res.Seats, SeatsAnswered: res.SeatsAnswered, Converged: res.Converged,
			RemainingFriction: res.RemainingFriction, ContestedPassage: res.ContestedPassage,
			BestSeatRationale: res.BestSeatRationale, BestSeatJudgedBy: res.BestSeatJudgedBy, Deliberation: res.Rounds,
			DivergenceFirstRound: res.DivergenceFirstRound, DivergenceFinalRound: res.DivergenceFinalRound,
			Capped: bill.Capped, SurchargeUSD: core.Dollars(bill.Surcharge), PlatformFeeUSD: core.Dollars(bill.PlatformFee),
			TokenChargeUSD: core.Dollars(bill.TokenCharge), CapCreditUSD: core.Dollars(bill.CapCredit), BilledUSD: core.Dollars(bill.Billed),
			CeilingUSD: core.Dollars(ceiling), LatencyMS: latency, Engines: engines, Substitutions: subs,
			SeatsUnavailable: res.SeatsUnavailable, StaffUnavailable: res.StaffUnavailable,
		},
	}
}

// admitOrAwait admits the call; when another call of this process holds
// its idempotency key, it waits for that call (awaitHolder) and, once it
// ended, asks again — without spending the key's rate twice — so that the
// repeat gets the replay, or runs when the call gave its key back.
func (s *Service) admitOrAwait(ctx context.Context, p *access.Principal, c Call, ap *core.AdmitParams, req *ChatParams) (*core.AdmitResult, error) {
	adm, err := s.admit(ctx, p, c, ap)
	if err != nil || adm.Refused == nil {
		return adm, err
	}
	ended, err := s.awaitHolder(ctx, p, adm.Claim, req)
	if err != nil || !ended {
		return adm, err // err: the caller left while it waited
	}
	ap.PerMinute = 0 // the first asking spent the key's rate
	return s.tryAdmit(ctx, p, c, ap)
}

// awaitHolder waits for the call that holds a repeat's idempotency key to
// end, when that call is in flight in this process and was made by the
// repeat's API key, for at most RepeatWait; it reports whether the call
// ended. The wait costs the repeat no slot and no trip to the store, and
// ends as soon as the call has settled or given back its claim. When ctx
// ends first — the caller left — it returns ctx's error.
func (s *Service) awaitHolder(ctx context.Context, p *access.Principal, claim *core.Claim, req *ChatParams) (bool, error) {
	if claim == nil || claim.State != core.ClaimInFlight || s.cfg.RepeatWait <= 0 ||
		!claimedBy(claim.RequestHash, p.RateID(), req.RequestHash) {
		return false, nil
	}
	done := s.ended(claim.RequestID)
	if done == nil {
		return false, nil // it runs on another replica
	}
	t := time.NewTimer(s.cfg.RepeatWait)
	defer t.Stop()
	select {
	case <-done:
		return true, nil
	case <-t.C:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// repeat answers a call whose idempotency key another call holds: 409
// while that call runs, with the expected time to its end as Retry-After;
// the stored answer once it succeeded.
func (s *Service) repeat(ctx context.Context, p *access.Principal, mode *core.Mode, claim *core.Claim, req *ChatParams) (*ChatResult, error) {
	if !claimedBy(claim.RequestHash, p.RateID(), req.RequestHash) {
		return nil, core.Errorf(core.CodeIdempotencyKeyReused,
			"This Idempotency-Key was sent by another API key of the organisation, and a key's answers are its own. Send a new Idempotency-Key.").WithParam("Idempotency-Key")
	}
	switch claim.State {
	case core.ClaimInFlight:
		e := core.Errorf(core.CodeRequestInProgress, "A request with this Idempotency-Key (%s) is still running. Wait for it, then repeat to get its answer.", claim.RequestID)
		e.RetryAfter = s.retryAfter(mode, claim.RequestID)
		return nil, e
	case core.ClaimStopped:
		return nil, core.Errorf(core.CodeReconciliationRequired, "An earlier attempt with this Idempotency-Key stopped mid-charge. Retry with a new key.")
	}
	rc, err := s.d.Receipts.GetReceipt(ctx, p.Org.ID, claim.RequestID)
	if err != nil {
		return nil, core.Errorf(core.CodeServiceUnavailable, "The stored answer for this Idempotency-Key could not be read; nothing was run or billed. Retry shortly.").WithCause(err)
	}
	comp, err := decodeStored(rc.Response)
	if err != nil {
		return nil, core.Errorf(core.CodeServiceUnavailable, "The stored answer for this Idempotency-Key could not be read; nothing was run or billed. Retry shortly.").WithCause(err)
	}
	return &ChatResult{Replay: &Replay{Completion: comp, RequestID: claim.RequestID}}, nil
}

// keyedHash is what a call's idempotency claim records of it: the first
// half of the SHA-256 of the API key that sent it, then the first half of
// the request's hash. A repeat of the idempotency key is answered only to
// the API key that made the call (see claimedBy).
func keyedHash(keyID string, requestHash []byte) []byte {
	if len(requestHash) != sha256.Size {
		h := sha256.Sum256(requestHash)
		requestHash = h[:]
	}
	k := sha256.Sum256([]byte(keyID))
	out := make([]byte, 0, sha256.Size)
	out = append(out, k[:sha256.Size/2]...)
	return append(out, requestHash[:sha256.Size/2]...)
}

// claimedBy tells whether the call that holds an idempotency key was made
// by the API key keyID. A claim recorded before claims carried their key
// (its hash is the whole request hash) counts as the asker's when the
// request is the same.
func claimedBy(claimHash []byte, keyID string, requestHash []byte) bool {
	k := sha256.Sum256([]byte(keyID))
	return bytes.HasPrefix(claimHash, k[:sha256.Size/2]) || bytes.Equal(claimHash, requestHash)
}

// Retry-After bounds for request_in_progress.
const (
	minRetryAfter = time.Second
	// maxRetryAfter is the longest wait official OpenAI clients honour
	// from Retry-After (longer ones fall back to their own backoff).
	maxRetryAfter = 60 * time.Second
	// retryMargin lands the retry just after the settlement.
	retryMargin = time.Second
)

// retryAfter is how long a repeat should wait for the call requestID of
// mode to end: the time a deliberation of the mode is expected to take
// (see expectedDuration) less what the call has already run when it runs
// in this process, plus a margin. A call already past that is expected to
// end within a quarter of it more.
func (s *Service) retryAfter(mode *core.Mode, requestID string) time.Duration {
	expected := s.expectedDuration(mode)
	remaining := expected
	if started, ok := s.startedAt(requestID); ok {
		remaining = expected - time.Since(started)
		if remaining < expected/4 {
			remaining = expected / 4
		}
	}
	return min(max(remaining+retryMargin, minRetryAfter), maxRetryAfter)
}

// expectedDuration is how long a deliberation of mode is expected to take:
// the median of its recent deliberations in this process; before one has
// finished, the time its configuration lets its rounds wait for their seats
// (the straggler deadline, once per round it may run) — an overestimate
// for most questions, which costs a repeat some waiting, where an
// underestimate would spend a client's few retries before the answer
// exists; for a mode without a straggler deadline, ConcurrencyRetryAfter.
func (s *Service) expectedDuration(mode *core.Mode) time.Duration {
	if d, ok := s.latency.median(mode.ID); ok {
		return d
	}
	if d := mode.Deliberation; d.StragglerDeadline > 0 && d.MaxRounds > 0 {
		return time.Duration(d.MaxRounds) * d.StragglerDeadline
	}
	return s.cfg.ConcurrencyRetryAfter
}
