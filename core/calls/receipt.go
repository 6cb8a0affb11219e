package calls

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/deliberate"
)

// receiptFor builds the receipt written with the settlement: bill, as
// billing (whose fee rates the calls show) computed it, completed at
// completed after latency milliseconds.
func receiptFor(mode *core.Mode, hash string, res *deliberate.Result, bill core.Bill, billing core.BillInput, orgID string, latency int64, completed time.Time) *core.Receipt {
	status := statusSucceeded
	if bill.Capped {
		status = statusCapped
	}
	rounds := len(res.Rounds)
	score := res.Classification.Score
	rc := &core.Receipt{
		OrgID: orgID, Mode: mode.ID, ModeKey: mode.Key, ModeConfigHash: hash, ModeVersion: mode.Version, Status: status,
		Billed: bill.Billed, TokenCharge: bill.TokenCharge, Surcharge: bill.Surcharge, PlatformFee: bill.PlatformFee,
		PromptTokens: res.Usage.PromptTokens, CompletionTokens: res.Usage.CompletionTokens,
		Rounds: &rounds, SeatCount: res.Seats, Payer: orgID, Lane: res.Lane,
		FinishReason: res.Finish, Substituted: len(res.Substitutions) > 0,
		DifficultyScore: &score, TaskType: res.Classification.TaskType, HallucinationRisk: res.Classification.HallucinationRisk,
		LatencyMS: &latency, CompletedAt: &completed,
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
	used := map[string]bool{}
	for _, c := range res.Calls {
		fallback := c.Fallback
		round := c.Round
		latency := c.Ended.Sub(c.Started).Milliseconds()
		rate := billing.FeeRate(core.IsBYOKSource(c.Source))
		source := c.Source
		if source == "" {
			source = core.SourceService
		}
		call := core.ReceiptCall{
			Role: c.Role, ModelUsed: c.Engine, OriginalModel: c.Original, FallbackUsed: &fallback, RoundNumber: &round,
			TokensIn: c.InputTokens, TokensOut: c.OutputTokens, LatencyMS: &latency, StartedAt: c.Started, EndedAt: c.Ended,
			Source: source, RealCost: c.Cost, FeeRatePPM: rate, Fee: core.CallFee(c.Cost, rate), Content: c.Content,
			Seat: c.Seat, Hedged: c.Hedged || c.Role == deliberate.RoleHedge,
		}
		call.Attempt, call.ErrorClass = attemptOf(c, res, used)
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

// attemptOf is how call c of res ended, as its receipt records it (a
// core.Attempt… value, and the failure's class for a failed call). used
// marks the seat turns and staff roles already given their winning call.
func attemptOf(c deliberate.Call, res *deliberate.Result, used map[string]bool) (string, string) {
	var turn *deliberate.SeatTurn
	if c.Seat != "" && c.Round >= 1 && c.Round <= len(res.Rounds) {
		for i, t := range res.Rounds[c.Round-1].Seats {
			if t.Seat == c.Seat {
				turn = &res.Rounds[c.Round-1].Seats[i]
				break
			}
		}
	}
	switch c.Outcome {
	case deliberate.OutcomeOK:
		slot := c.Role + "/" + strconv.Itoa(c.Round)
		if c.Seat != "" {
			slot = c.Seat + "/" + strconv.Itoa(c.Round)
		}
		if used[slot] || (turn != nil && (!turn.Answered || turn.Engine != c.Engine)) {
			return core.AttemptAnswered, ""
		}
		used[slot] = true
		return core.AttemptWon, ""
	case deliberate.OutcomeCancelled:
		if turn != nil && turn.ClosedBy == deliberate.ClosedByQuorum {
			return core.AttemptCut, ""
		}
		return core.AttemptCancelled, ""
	}
	return core.AttemptFailed, string(c.Outcome)
}

// ReceiptAnswer is what GET receipts answers: the call's receipt, or — for
// a call that never convened a panel — what became of it.
type ReceiptAnswer struct {
	Receipt *core.Receipt
	Outcome *core.CallOutcome
}

// Receipt reads p's organisation's receipt for requestID, or the outcome of
// a call that has none. Both reads are scoped to the organisation; anything
// else is receipt_not_found.
func (s *Service) Receipt(ctx context.Context, p *access.Principal, requestID string) (*ReceiptAnswer, error) {
	notFound := core.Errorf(core.CodeReceiptNotFound, "No receipt for request %s in this organisation.", printable(requestID)).WithParam("request_id")
	if len(requestID) > maxRequestIDLen || !visibleASCII(requestID) {
		// Not an id Conclave issues (it might hold a NUL or invalid UTF-8,
		// which the database refuses): there is nothing to look up.
		return nil, notFound
	}
	unreadable := func(err error) error {
		return core.Errorf(core.CodeServiceUnavailable, "The receipt could not be read. Retry shortly.").WithCause(err)
	}
	rc, err := s.d.Receipts.GetReceipt(ctx, p.Org.ID, requestID)
	switch {
	case err == nil:
		return &ReceiptAnswer{Receipt: rc}, nil
	case !errors.Is(err, core.ErrNotFound):
		return nil, unreadable(err)
	}
	if s.d.Outcomes != nil {
		o, err := s.d.Outcomes.GetOutcome(ctx, p.Org.ID, requestID)
		switch {
		case err == nil:
			return &ReceiptAnswer{Outcome: o}, nil
		case !errors.Is(err, core.ErrNotFound):
			return nil, unreadable(err)
		}
	}
	return nil, notFound
}

// maxRequestIDLen bounds a request id read from a caller; Conclave's are
// 24 characters.
const maxRequestIDLen = 64

// printable is s as it may be echoed in a message: quoted with Go's
// escapes when it holds anything but visible ASCII, cut to its first 64
// bytes.
func printable(s string) string {
	if len(s) > maxRequestIDLen {
		s = s[:maxRequestIDLen]
	}
	if visibleASCII(s) {
		return s
	}
	return strconv.Quote(s)
}

// recordOutcome stores what became of a call that will have no receipt, so
// that GET receipts answers its id with the receipt-unavailable form. It is
// best-effort: a failure is logged and the call's own answer stands.
func (s *Service) recordOutcome(ctx context.Context, p *access.Principal, c Call, status core.OutcomeStatus, reason string) {
	if s.d.Outcomes == nil || c.RequestID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := s.d.Outcomes.RecordOutcome(ctx, &core.CallOutcome{RequestID: c.RequestID, OrgID: p.Org.ID, Endpoint: c.Endpoint, Status: status, Reason: reason})
	if err != nil {
		s.log.ErrorContext(ctx, "recording a call outcome", "request_id", c.RequestID, "error", err.Error())
	}
}
