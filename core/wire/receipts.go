package wire

import (
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/calls"
)

// Receipt responses. Field meanings: docs/receipts.md.

// ReceiptResponse is the answer for a call that has a receipt.
type ReceiptResponse struct {
	OK               bool         `json:"ok"`
	ReceiptAvailable bool         `json:"receipt_available"`
	Receipt          *receiptJSON `json:"receipt"`
}

// ReceiptUnavailable is the answer for a call that never convened a panel:
// no receipt key.
type ReceiptUnavailable struct {
	OK               bool   `json:"ok"`
	RequestID        string `json:"request_id"`
	Status           string `json:"status"`
	ReceiptAvailable bool   `json:"receipt_available"`
	Reason           string `json:"reason"`
}

type receiptJSON struct {
	RequestID             string             `json:"request_id"`
	Mode                  string             `json:"mode"`
	ModeKey               string             `json:"mode_key"`
	ModeConfigHash        string             `json:"mode_config_hash"`
	ModeVersion           *int               `json:"mode_version"`
	Status                string             `json:"status"`
	BilledUSD             core.Dollars       `json:"billed_usd"`
	TokenChargeUSD        core.Dollars       `json:"token_charge_usd"`
	PlatformFeeUSD        core.Dollars       `json:"platform_fee_usd"`
	QSurchargeUSD         core.Dollars       `json:"q_surcharge_usd"`
	CapCreditUSD          *core.Dollars      `json:"cap_credit_usd"`
	PromptTokens          int                `json:"prompt_tokens"`
	CompletionTokens      int                `json:"completion_tokens"`
	Rounds                *int               `json:"rounds"`
	SeatCount             int                `json:"seat_count"`
	Payer                 string             `json:"payer"`
	PayerKind             *string            `json:"payer_kind"`
	PersonID              *string            `json:"person_id"`
	Lane                  *string            `json:"lane"`
	DifficultyScore       *float64           `json:"difficulty_score"`
	TaskType              *string            `json:"task_type"`
	HallucinationRisk     *string            `json:"hallucination_risk"`
	MinorityInsightLikely *bool              `json:"minority_insight_likely"`
	BestSeat              *bestSeatJSON      `json:"best_seat"`
	Seats                 []seatJSON         `json:"seats"`
	Staff                 []staffJSON        `json:"staff"`
	SeatsUnavailable      []core.Unavailable `json:"seats_unavailable"`
	StaffUnavailable      []core.Unavailable `json:"staff_unavailable"`
	LatencyMS             *int64             `json:"latency_ms"`
	CreatedAt             time.Time          `json:"created_at"`
	CompletedAt           *time.Time         `json:"completed_at"`
	// TranscriptKept is false when the organisation kept this receipt
	// without prompt and answer text (its content-retention setting):
	// include_transcript=true then shows no content.
	TranscriptKept bool `json:"transcript_kept"`
	// TraceID is the call's OpenTelemetry trace when it was traced
	// (docs/observability.md); absent otherwise.
	TraceID string `json:"trace_id,omitempty"`
}

type bestSeatJSON struct {
	ModelUsed  string   `json:"model_used"`
	JudgeScore *float64 `json:"judge_score"`
	Content    *string  `json:"content,omitempty"`
}

// callJSON is what every seat and staff entry says about its engine call.
type callJSON struct {
	ModelUsed     string       `json:"model_used"`
	OriginalModel *string      `json:"original_model"`
	FallbackUsed  *bool        `json:"fallback_used"`
	RoundNumber   *int         `json:"round_number"`
	TokensIn      int          `json:"tokens_in"`
	TokensOut     int          `json:"tokens_out"`
	LatencyMS     *int64       `json:"latency_ms"`
	StartedAt     time.Time    `json:"started_at"`
	EndedAt       time.Time    `json:"ended_at"`
	Source        string       `json:"source"`
	RealCostUSD   core.Dollars `json:"real_cost_usd"`
	FeeRate       feeRate      `json:"fee_rate"`
	FeeUSD        core.Dollars `json:"fee_usd"`
	Content       *string      `json:"content,omitempty"`
}

type seatJSON struct {
	Role       string   `json:"role"`
	JudgeScore *float64 `json:"judge_score"`
	IsBestSeat *bool    `json:"is_best_seat"`
	// Answered is false for a call that returned no answer (a failed
	// primary whose backup ran, a straggler closed on quorum).
	Answered bool `json:"answered"`
	callJSON
}

// staffJSON is a staff engine call, or — with no call fields — a staff role
// that could not run and has no call to show.
type staffJSON struct {
	Role      string  `json:"role"`
	Available bool    `json:"available"`
	Reason    *string `json:"reason"`
	*callJSON
}

// feeRate is a fee rate in parts per million that marshals as a fraction
// (50000 → 0.05), written from the integer.
type feeRate int64

func (f feeRate) MarshalJSON() ([]byte, error) { return []byte(core.Micros(f).String()), nil }

// ReceiptOf is the answer to GET /v1/receipts/{request_id} and the
// get_receipt tool's result: the receipt (each call's text only with the
// transcript), or the receipt-unavailable form.
func ReceiptOf(a *calls.ReceiptAnswer, transcript bool) any {
	if a.Receipt != nil {
		return &ReceiptResponse{OK: true, ReceiptAvailable: true, Receipt: receiptView(a.Receipt, transcript)}
	}
	return &ReceiptUnavailable{OK: true, RequestID: a.Outcome.RequestID, Status: string(a.Outcome.Status), Reason: a.Outcome.Reason}
}

// receiptView is the wire form of a stored receipt. Content (seats, staff,
// best seat) is shown only with the transcript.
func receiptView(rc *core.Receipt, transcript bool) *receiptJSON {
	v := &receiptJSON{
		RequestID: rc.RequestID, Mode: rc.Mode, ModeKey: rc.ModeKey, ModeConfigHash: rc.ModeConfigHash, ModeVersion: positive(rc.ModeVersion), Status: rc.Status,
		BilledUSD: core.Dollars(rc.Billed), TokenChargeUSD: core.Dollars(rc.TokenCharge),
		PlatformFeeUSD: core.Dollars(rc.PlatformFee), QSurchargeUSD: core.Dollars(rc.Surcharge),
		PromptTokens: rc.PromptTokens, CompletionTokens: rc.CompletionTokens, Rounds: rc.Rounds, SeatCount: rc.SeatCount,
		Payer: rc.Payer, PayerKind: nullable(rc.PayerKind), PersonID: nullable(rc.PersonID), Lane: nullable(string(rc.Lane)), DifficultyScore: rc.DifficultyScore, TaskType: nullable(rc.TaskType),
		HallucinationRisk: nullable(rc.HallucinationRisk), MinorityInsightLikely: rc.MinorityInsightLikely,
		Seats: []seatJSON{}, Staff: []staffJSON{}, SeatsUnavailable: nonNilUnavailable(rc.SeatsUnavailable),
		StaffUnavailable: nonNilUnavailable(rc.StaffUnavailable), LatencyMS: rc.LatencyMS,
		CreatedAt: rc.CreatedAt, CompletedAt: rc.CompletedAt, TranscriptKept: !rc.TranscriptDropped, TraceID: rc.TraceID,
	}
	// A receipt kept without its text has none to show: no content field,
	// whatever include_transcript says (transcript_kept says why).
	transcript = transcript && !rc.TranscriptDropped
	if rc.CapCredit != nil {
		c := core.Dollars(*rc.CapCredit)
		v.CapCreditUSD = &c
	}
	if b := rc.BestSeat; b != nil {
		v.BestSeat = &bestSeatJSON{ModelUsed: b.ModelUsed, JudgeScore: b.JudgeScore}
		if transcript {
			v.BestSeat.Content = &b.Content
		}
	}
	for _, c := range rc.Seats {
		v.Seats = append(v.Seats, seatJSON{Role: c.Role, JudgeScore: c.JudgeScore, IsBestSeat: c.IsBestSeat,
			Answered: answered(c), callJSON: *callView(c, transcript)})
	}
	v.Staff = staffView(rc, transcript)
	return v
}

// answered tells whether a recorded call returned an answer: only an
// answered call records text, or — on a receipt kept without its
// transcript — is marked answered.
func answered(c core.ReceiptCall) bool { return c.Content != "" || c.Answered }

func callView(c core.ReceiptCall, transcript bool) *callJSON {
	cj := &callJSON{
		ModelUsed: c.ModelUsed, OriginalModel: nullable(c.OriginalModel), FallbackUsed: c.FallbackUsed, RoundNumber: c.RoundNumber,
		TokensIn: c.TokensIn, TokensOut: c.TokensOut, LatencyMS: c.LatencyMS, StartedAt: c.StartedAt, EndedAt: c.EndedAt,
		Source: c.Source, RealCostUSD: core.Dollars(c.RealCost), FeeRate: feeRate(c.FeeRatePPM), FeeUSD: core.Dollars(c.Fee),
	}
	if transcript {
		content := c.Content
		cj.Content = &content
	}
	return cj
}

// staffView lists the staff calls, each marked available or not, then one
// entry for each role in staff_unavailable that no unavailable call already
// shows (a role that failed without a call of its own, or whose engine
// answered unusably).
func staffView(rc *core.Receipt, transcript bool) []staffJSON {
	why := map[string]string{}
	for _, u := range rc.StaffUnavailable {
		if _, dup := why[u.Role]; !dup {
			why[u.Role] = u.Reason
		}
	}
	out := []staffJSON{}
	shown := map[string]bool{}
	for _, c := range rc.Staff {
		e := staffJSON{Role: c.Role, Available: answered(c), callJSON: callView(c, transcript)}
		if !e.Available {
			reason, ok := why[c.Role]
			if !ok {
				reason = "the engine returned no answer"
				if roleAnswered(rc.Staff, c) {
					reason += "; another engine answered for the role"
				}
			}
			e.Reason = &reason
			shown[c.Role] = true
		}
		out = append(out, e)
	}
	for _, u := range rc.StaffUnavailable {
		if shown[u.Role] {
			continue
		}
		shown[u.Role] = true
		reason := u.Reason
		out = append(out, staffJSON{Role: u.Role, Available: false, Reason: &reason})
	}
	return out
}

// roleAnswered tells whether another call of c's role in c's round answered.
func roleAnswered(calls []core.ReceiptCall, c core.ReceiptCall) bool {
	for _, o := range calls {
		if o.Role == c.Role && answered(o) && equalInt(o.RoundNumber, c.RoundNumber) {
			return true
		}
	}
	return false
}

func equalInt(a, b *int) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// nullable maps "" to null.
// positive is n, or nil (null on the wire) when n is 0.
func positive(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nonNilUnavailable(u []core.Unavailable) []core.Unavailable {
	if u == nil {
		return []core.Unavailable{}
	}
	return u
}
