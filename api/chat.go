package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/deliberate"
)

// Deliberator runs a deliberation; *deliberate.Engine is one.
type Deliberator interface {
	Run(ctx context.Context, req *deliberate.Request) (*deliberate.Result, error)
}

// Receipt statuses Conclave records.
const (
	statusSucceeded = "succeeded"
	statusCapped    = "capped"
)

// completionHead is the standard part of a chat completion, the same in a
// response and in its replay.
type completionHead struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   chatUsage    `json:"usage"`
}

type chatCompletion struct {
	completionHead
	Panel panelBlock `json:"panel"`
}

type chatChoice struct {
	Index        int          `json:"index"`
	Message      core.Message `json:"message"`
	FinishReason string       `json:"finish_reason"`
}

type chatUsage struct {
	PromptTokens            int                `json:"prompt_tokens"`
	CompletionTokens        int                `json:"completion_tokens"`
	TotalTokens             int                `json:"total_tokens"`
	CompletionTokensDetails completionTokenUse `json:"completion_tokens_details"`
}

type completionTokenUse struct {
	ReasoningTokens *int `json:"reasoning_tokens"`
}

// panelBlock is the spec's panel object. Field meanings: docs/chat.md.
type panelBlock struct {
	RequestID            string                       `json:"request_id"`
	Mode                 string                       `json:"mode"`
	ModeKey              string                       `json:"mode_key"`
	ModeConfigHash       string                       `json:"mode_config_hash"`
	Lane                 core.Lane                    `json:"lane"`
	Rounds               int                          `json:"rounds"`
	Seats                int                          `json:"seats"`
	SeatsAnswered        int                          `json:"seats_answered"`
	Converged            *bool                        `json:"converged"`
	RemainingFriction    *string                      `json:"remaining_friction"`
	ContestedPassage     *deliberate.ContestedPassage `json:"contested_passage"`
	BestSeatRationale    string                       `json:"best_seat_rationale"`
	BestSeatJudgedBy     string                       `json:"best_seat_judged_by"`
	Deliberation         []deliberate.Round           `json:"deliberation"`
	DivergenceFirstRound *float64                     `json:"divergence_first_round"`
	DivergenceFinalRound *float64                     `json:"divergence_final_round"`
	Capped               bool                         `json:"capped"`
	SurchargeUSD         core.Dollars                 `json:"surcharge_usd"`
	PlatformFeeUSD       core.Dollars                 `json:"platform_fee_usd"`
	TokenChargeUSD       core.Dollars                 `json:"token_charge_usd"`
	CapCreditUSD         core.Dollars                 `json:"cap_credit_usd"`
	BilledUSD            core.Dollars                 `json:"billed_usd"`
	CeilingUSD           core.Dollars                 `json:"ceiling_usd"`
	LatencyMS            int64                        `json:"latency_ms"`
	Engines              []string                     `json:"engines"`
	Substitutions        []deliberate.Substitution    `json:"substitutions"`
	SeatsUnavailable     []core.Unavailable           `json:"seats_unavailable,omitempty"`
	StaffUnavailable     []core.Unavailable           `json:"staff_unavailable,omitempty"`
	Persisted            bool                         `json:"persisted"`
}

// chat answers POST /v1/chat/completions: a billed deliberation.
func (h *handler) chat(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var body chatBody
	if !decodeJSON(w, r, h.cfg.MaxBodyBytes, &body) {
		return
	}
	req, err := parseChatRequest(&body)
	if err != nil {
		writeError(w, r, err)
		return
	}
	p := principalOf(r.Context())
	mode, ok := h.resolveModeTier(w, r, req.Model, core.ActionChatCreate, req.Tier)
	if !ok {
		return
	}
	limit := p.key.MaxInputTokens
	if limit == 0 {
		limit = h.cfg.MaxInputTokens
	}
	if n, over := h.tokensOver(req.Messages, limit); over {
		writeError(w, r, core.Errorf(core.CodeContextLengthExceeded, "The prompt is %d tokens, over this key's limit of %d input tokens.", n, limit).WithParam("messages"))
		return
	}

	requestID := RequestID(r.Context())
	idemKey, err := idempotencyKey(r, p, req.Model, req.Messages)
	if err != nil {
		writeError(w, r, err)
		return
	}
	ceiling := core.Ceiling(p.key.Ceiling, mode.Pricing.Price(), h.cfg.CallCeilingFloor, req.MaxCost)
	ap := &core.AdmitParams{IdempotencyKey: idemKey, RequestHash: requestHash(&body),
		Hold: core.PlaceHoldParams{Amount: ceiling, MonthlyQuota: p.org.MonthlyQuota}}
	if !p.org.Verified() {
		ap.Hold.ActivationAllowance = h.cfg.ActivationAllowance
	}
	adm, slot := h.admit(w, r, p, ap)
	if adm == nil {
		return
	}
	if slot == nil {
		h.repeat(w, r, p, adm.Claim)
		return
	}
	defer slot.release()
	hold := adm.Hold
	// Until the call settles, a failure gives everything back: the hold
	// (not billed) and the claim (a retry with the same key runs), even if
	// the caller has gone.
	settled := false
	defer func() {
		if settled {
			return
		}
		ctx := context.WithoutCancel(r.Context())
		if err := h.store.ReleaseHold(ctx, hold.ID, p.org.ID); err != nil {
			h.log.ErrorContext(r.Context(), "releasing a hold", slog.String("request_id", requestID), slog.String("error", err.Error()))
		}
		if err := h.rails.ReleaseClaim(ctx, p.org.ID, idemKey, requestID); err != nil {
			h.log.ErrorContext(r.Context(), "releasing an idempotency claim", slog.String("request_id", requestID), slog.String("error", err.Error()))
		}
	}()

	res, err := h.deliberator.Run(r.Context(), &deliberate.Request{Mode: mode, Tier: req.Tier, Messages: req.Messages, OrgID: p.org.ID, RequestID: requestID})
	if err != nil {
		switch {
		case errors.Is(err, deliberate.ErrModeUnavailable):
			writeError(w, r, core.Errorf(core.CodeModeUnavailable, "No seat of this mode could run; nothing was billed. Retry shortly.").WithCause(err))
			h.recordOutcome(r, core.OutcomeFailed, "no seat of the mode could run; nothing was billed")
		case r.Context().Err() != nil:
			writeError(w, r, core.Errorf(core.CodeInternalError, "The request was cancelled; nothing was billed.").WithCause(err))
			h.recordOutcome(r, core.OutcomeFailed, "the request was cancelled before the deliberation ended; nothing was billed")
		default:
			writeError(w, r, core.Errorf(core.CodeUpstreamProviderError, "The deliberation failed; nothing was billed. Retry with the same request.").WithCause(err))
			h.recordOutcome(r, core.OutcomeFailed, "the deliberation failed; nothing was billed")
		}
		return
	}

	bill := core.ComputeBill(core.BillInput{Calls: billedCalls(res), Surcharge: surcharge(mode, res), Ceiling: ceiling})
	latency := time.Since(start).Milliseconds()
	resp := h.completion(mode, res, bill, ceiling, requestID, latency)
	receipt := receiptFor(mode, h.catalog.ConfigHash(mode), res, bill, p.org.ID, latency)
	receipt.CreatedAt, receipt.RequestID = start, requestID
	// One encoding serves both the receipt's stored answer (for replays)
	// and the response: persisted is true in both, since the response is
	// sent only once the settlement that stores it has committed.
	resp.Panel.Persisted = true
	raw, err := marshalJSON(resp)
	if err != nil {
		writeError(w, r, core.Errorf(core.CodeInternalError, "The answer could not be encoded; nothing was billed.").WithCause(err))
		return
	}
	receipt.Response = raw
	claimState := core.ClaimSucceeded
	if bill.Capped {
		claimState = core.ClaimCapped
	}
	// Settled even if the caller has gone: the deliberation ran, and its
	// answer is kept for a replay.
	if _, err := h.store.SettleCall(context.WithoutCancel(r.Context()), &core.SettleCallParams{
		HoldID: hold.ID, OrgID: p.org.ID, Billed: bill.Billed, Receipt: receipt, IdempotencyKey: idemKey, ClaimState: claimState,
	}); err != nil {
		if errors.Is(err, core.ErrOutcomeUnknown) {
			// Perhaps billed: a retry with the same key replays the answer if
			// it was, and runs again (billed once) if not.
			writeError(w, r, core.Errorf(core.CodeInternalError, "The deliberation's bill could not be confirmed. Retry with the same Idempotency-Key: you receive its answer if it was billed, and it is never billed twice.").WithCause(err))
			return
		}
		writeError(w, r, core.Errorf(core.CodeCostUnreadable, "The deliberation could not be recorded; nothing was billed. Retry.").WithCause(err))
		h.recordOutcome(r, core.OutcomeFailed, "the deliberation could not be recorded; nothing was billed")
		return
	}
	settled, slot.freedBySettlement = true, true
	writeRawJSON(w, http.StatusOK, raw)
}

// surcharge is the mode's surcharge for the call: its express price on the
// express lane when it has one, else the price for the classified depth.
func surcharge(mode *core.Mode, res *deliberate.Result) core.Micros {
	if res.Lane == core.LaneExpress && mode.Pricing.Express != nil {
		return *mode.Pricing.Express
	}
	return mode.Pricing.SurchargeFor(res.Classification.Depth)
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

func (h *handler) completion(mode *core.Mode, res *deliberate.Result, bill core.Bill, ceiling core.Micros, requestID string, latency int64) *chatCompletion {
	reasoning := res.Usage.ReasoningTokens
	subs := res.Substitutions
	if subs == nil {
		subs = []deliberate.Substitution{}
	}
	engines := res.Engines
	if engines == nil {
		engines = []string{}
	}
	return &chatCompletion{
		completionHead: completionHead{
			ID: "chatcmpl-" + strings.TrimPrefix(requestID, "req_"), Object: "chat.completion", Created: time.Now().Unix(), Model: mode.ID,
			Choices: []chatChoice{{Index: 0, Message: core.Message{Role: core.RoleAssistant, Content: res.Answer}, FinishReason: res.Finish}},
			Usage: chatUsage{
				PromptTokens: res.Usage.PromptTokens, CompletionTokens: res.Usage.CompletionTokens,
				TotalTokens:             res.Usage.PromptTokens + res.Usage.CompletionTokens,
				CompletionTokensDetails: completionTokenUse{ReasoningTokens: &reasoning},
			},
		},
		Panel: panelBlock{
			RequestID: requestID, Mode: mode.ID, ModeKey: mode.Key, ModeConfigHash: h.catalog.ConfigHash(mode), Lane: res.Lane,
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

// receiptFor builds the receipt written with the settlement.
func receiptFor(mode *core.Mode, hash string, res *deliberate.Result, bill core.Bill, orgID string, latency int64) *core.Receipt {
	status := statusSucceeded
	if bill.Capped {
		status = statusCapped
	}
	rounds := len(res.Rounds)
	score := res.Classification.Score
	now := time.Now()
	rc := &core.Receipt{
		OrgID: orgID, Mode: mode.ID, ModeKey: mode.Key, ModeConfigHash: hash, Status: status,
		Billed: bill.Billed, TokenCharge: bill.TokenCharge, Surcharge: bill.Surcharge, PlatformFee: bill.PlatformFee,
		PromptTokens: res.Usage.PromptTokens, CompletionTokens: res.Usage.CompletionTokens,
		Rounds: &rounds, SeatCount: res.Seats, Payer: orgID, Lane: res.Lane,
		DifficultyScore: &score, TaskType: res.Classification.TaskType, HallucinationRisk: res.Classification.HallucinationRisk,
		LatencyMS: &latency, CompletedAt: &now,
	}
	if bill.Capped {
		credit := bill.CapCredit
		rc.CapCredit = &credit
	} else {
		zero := core.Micros(0)
		rc.CapCredit = &zero
	}
	for _, u := range res.SeatsUnavailable {
		rc.SeatsUnavailable = append(rc.SeatsUnavailable, core.Unavailable{Role: u.Role, Reason: u.Reason})
	}
	for _, u := range res.StaffUnavailable {
		rc.StaffUnavailable = append(rc.StaffUnavailable, core.Unavailable{Role: u.Role, Reason: u.Reason})
	}
	last := len(res.Rounds)
	for _, c := range res.Calls {
		fallback := c.Fallback
		round := c.Round
		latency := c.Ended.Sub(c.Started).Milliseconds()
		rate := core.FeeRate(core.IsBYOKSource(c.Source))
		source := c.Source
		if source == "" {
			source = core.SourceService
		}
		call := core.ReceiptCall{
			Role: c.Role, ModelUsed: c.Engine, OriginalModel: c.Original, FallbackUsed: &fallback, RoundNumber: &round,
			TokensIn: c.InputTokens, TokensOut: c.OutputTokens, LatencyMS: &latency, StartedAt: c.Started, EndedAt: c.Ended,
			Source: source, RealCost: c.Cost, FeeRatePPM: rate, Fee: core.CallFee(c.Cost, rate), Content: c.Content,
		}
		if c.Seat != "" && c.Round >= 1 && c.Round <= last {
			if j := res.Rounds[c.Round-1].Judgment; j != nil && c.Outcome == deliberate.OutcomeOK {
				if s, ok := j.Scores[c.Seat]; ok {
					call.JudgeScore = &s
				}
			}
			best := c.Round == last && c.Seat == res.BestSeat.Seat && c.Engine == res.BestSeat.ModelUsed && c.Outcome == deliberate.OutcomeOK
			call.IsBestSeat = &best
			if best && rc.BestSeat == nil {
				rc.BestSeat = &core.BestSeat{ModelUsed: c.Engine, JudgeScore: res.BestSeat.JudgeScore, Content: c.Content}
			}
			rc.Seats = append(rc.Seats, call)
			continue
		}
		rc.Staff = append(rc.Staff, call)
	}
	return rc
}

// replayCompletion is a stored completion sent again: the standard fields as
// first sent, and the replay form of panel.
type replayCompletion struct {
	completionHead
	Panel replayPanel `json:"panel"`
}

// replayPanel is the spec's replay form of panel: only these fields.
type replayPanel struct {
	RequestID       string `json:"request_id"`
	Replayed        bool   `json:"replayed"`
	Mode            string `json:"mode"`
	Note            string `json:"note"`
	SeatsAnswered   *int   `json:"seats_answered,omitempty"`
	AnswerTruncated *bool  `json:"answer_truncated,omitempty"`
}

// replayNote is the replay form's note.
const replayNote = "This answer was stored when the request first succeeded and is replayed for a repeat with the same Idempotency-Key (sent, or derived from an identical request); nothing was run or billed again."

// repeat answers a call whose idempotency key another call holds.
func (h *handler) repeat(w http.ResponseWriter, r *http.Request, p *principal, claim *core.Claim) {
	switch claim.State {
	case core.ClaimInFlight:
		e := core.Errorf(core.CodeRequestInProgress, "A request with this Idempotency-Key (%s) is still running. Wait for it, then repeat to get its answer.", claim.RequestID)
		e.RetryAfter = h.cfg.ConcurrencyRetryAfter
		writeError(w, r, e)
		return
	case core.ClaimStopped:
		writeError(w, r, core.Errorf(core.CodeReconciliationRequired, "An earlier attempt with this Idempotency-Key stopped mid-charge. Retry with a new key."))
		return
	}
	rc, err := h.store.GetReceipt(r.Context(), p.org.ID, claim.RequestID)
	if err != nil || len(rc.Response) == 0 {
		if err == nil {
			err = errors.New("the receipt stores no response")
		}
		writeError(w, r, core.Errorf(core.CodeServiceUnavailable, "The stored answer for this Idempotency-Key could not be read; nothing was run or billed. Retry shortly.").WithCause(err))
		return
	}
	var stored chatCompletion
	if err := json.Unmarshal(rc.Response, &stored); err != nil {
		writeError(w, r, core.Errorf(core.CodeInternalError, "The stored answer for this Idempotency-Key is unreadable.").WithCause(err))
		return
	}
	out := replayCompletion{
		completionHead: stored.completionHead,
		Panel:          replayPanel{RequestID: claim.RequestID, Replayed: true, Mode: stored.Panel.Mode, Note: replayNote},
	}
	seats := stored.Panel.SeatsAnswered
	out.Panel.SeatsAnswered = &seats
	if len(stored.Choices) > 0 {
		truncated := stored.Choices[0].FinishReason == deliberate.FinishLength
		out.Panel.AnswerTruncated = &truncated
	}
	w.Header().Set("Idempotent-Replayed", "true")
	writeJSON(w, http.StatusOK, out)
}
