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

type chatCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   chatUsage    `json:"usage"`
	Panel   panelBlock   `json:"panel"`
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
	Lane                 string                       `json:"lane"`
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
	SeatsUnavailable     []deliberate.Unavailable     `json:"seats_unavailable,omitempty"`
	StaffUnavailable     []deliberate.Unavailable     `json:"staff_unavailable,omitempty"`
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
	if n := h.countTokens(req.Messages); n > limit {
		writeError(w, r, core.Errorf(core.CodeContextLengthExceeded, "The prompt is %d tokens, over this key's limit of %d input tokens.", n, limit).WithParam("messages"))
		return
	}

	requestID := RequestID(r.Context())
	ceiling := core.Ceiling(p.key.Ceiling, mode.Pricing.Price(), h.cfg.CallCeilingFloor, req.MaxCost)
	hold, err := h.store.PlaceHold(r.Context(), &core.PlaceHoldParams{OrgID: p.org.ID, RequestID: requestID, Amount: ceiling})
	if err != nil {
		if errors.Is(err, core.ErrInsufficientFunds) {
			writeError(w, r, core.Errorf(core.CodeInsufficientBalance, "The balance cannot cover this call's ceiling of $%s. Add funds or lower panel.max_cost_usd.", ceiling))
			return
		}
		writeError(w, r, core.Errorf(core.CodeServiceUnavailable, "The balance could not be checked; nothing was billed. Retry shortly.").WithCause(err))
		return
	}
	settled := false
	defer func() {
		if !settled {
			// A failed call is not billed: give the reservation back even if
			// the caller has gone.
			if err := h.store.ReleaseHold(context.WithoutCancel(r.Context()), hold.ID, p.org.ID); err != nil {
				h.log.ErrorContext(r.Context(), "releasing a hold", slog.String("request_id", requestID), slog.String("error", err.Error()))
			}
		}
	}()

	res, err := h.deliberator.Run(r.Context(), &deliberate.Request{Mode: mode, Tier: req.Tier, Messages: req.Messages, OrgID: p.org.ID, RequestID: requestID})
	if err != nil {
		switch {
		case errors.Is(err, deliberate.ErrModeUnavailable):
			writeError(w, r, core.Errorf(core.CodeModeUnavailable, "No seat of this mode could run; nothing was billed. Retry shortly.").WithCause(err))
		case r.Context().Err() != nil:
			writeError(w, r, core.Errorf(core.CodeInternalError, "The request was cancelled; nothing was billed.").WithCause(err))
		default:
			writeError(w, r, core.Errorf(core.CodeUpstreamProviderError, "The deliberation failed; nothing was billed. Retry with the same request.").WithCause(err))
		}
		return
	}

	bill := core.ComputeBill(core.BillInput{Calls: billedCalls(res), Surcharge: surcharge(mode, res), Ceiling: ceiling})
	latency := time.Since(start).Milliseconds()
	resp := h.completion(mode, res, bill, ceiling, requestID, latency)
	receipt := receiptFor(mode, h.catalog.ConfigHash(mode), res, bill, p.org.ID, latency)
	if raw, err := json.Marshal(resp); err == nil {
		receipt.Response = raw
	}
	if _, err := h.store.SettleCall(r.Context(), &core.SettleCallParams{HoldID: hold.ID, OrgID: p.org.ID, Billed: bill.Billed, Receipt: receipt}); err != nil {
		writeError(w, r, core.Errorf(core.CodeCostUnreadable, "The deliberation could not be recorded; nothing was billed. Retry.").WithCause(err))
		return
	}
	settled = true
	resp.Panel.Persisted = true
	writeJSON(w, http.StatusOK, resp)
}

// surcharge is the mode's surcharge for the call: its express price on the
// express lane when it has one, else the price for the classified depth.
func surcharge(mode *core.Mode, res *deliberate.Result) core.Micros {
	if res.Lane == deliberate.LaneExpress && mode.Pricing.Express != nil {
		return *mode.Pricing.Express
	}
	return mode.Pricing.SurchargeFor(res.Classification.Depth)
}

// billedCalls lists every call's source cost. Every call runs on the
// service's keys until bring-your-own-key exists.
func billedCalls(res *deliberate.Result) []core.BilledCall {
	out := make([]core.BilledCall, len(res.Calls))
	for i, c := range res.Calls {
		out[i] = core.BilledCall{RealCost: c.Cost}
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
		ID: "chatcmpl-" + strings.TrimPrefix(requestID, "req_"), Object: "chat.completion", Created: time.Now().Unix(), Model: mode.ID,
		Choices: []chatChoice{{Index: 0, Message: core.Message{Role: core.RoleAssistant, Content: res.Answer}, FinishReason: res.Finish}},
		Usage: chatUsage{
			PromptTokens: res.Usage.PromptTokens, CompletionTokens: res.Usage.CompletionTokens,
			TotalTokens:             res.Usage.PromptTokens + res.Usage.CompletionTokens,
			CompletionTokensDetails: completionTokenUse{ReasoningTokens: &reasoning},
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
		rate := core.FeeRate(false)
		call := core.ReceiptCall{
			Role: c.Role, ModelUsed: c.Engine, OriginalModel: c.Original, FallbackUsed: &fallback, RoundNumber: &round,
			TokensIn: c.InputTokens, TokensOut: c.OutputTokens, LatencyMS: &latency, StartedAt: c.Started, EndedAt: c.Ended,
			Source: "service", RealCost: c.Cost, FeeRatePPM: rate, Fee: core.CallFee(c.Cost, rate), Content: c.Content,
		}
		if c.Seat != "" && c.Round >= 1 && c.Round <= last {
			if j := res.Rounds[c.Round-1].Judgment; j != nil {
				if s, ok := j.Scores[c.Seat]; ok {
					call.JudgeScore = &s
				}
			}
			best := c.Round == last && c.Seat == res.BestSeat.Seat && c.Engine == res.BestSeat.Engine && c.Outcome == deliberate.OutcomeOK
			call.IsBestSeat = &best
			if best && rc.BestSeat == nil {
				rc.BestSeat = &core.BestSeat{ModelUsed: c.Engine, JudgeScore: res.BestSeat.Score, Content: c.Content}
			}
			rc.Seats = append(rc.Seats, call)
			continue
		}
		rc.Staff = append(rc.Staff, call)
	}
	return rc
}
