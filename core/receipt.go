package core

import (
	"encoding/json"
	"errors"
	"time"
)

// ErrAboveHold: a settlement tried to charge more than the call's hold
// reserved. Nothing was charged.
var ErrAboveHold = errors.New("charge above the hold")

// DefaultHoldTTL is how long a hold lives when PlaceHoldParams.TTL is zero:
// longer than the 300 s a client waits, so a hold outlives its call and the
// hold sweeper releases only those of calls that died.
const DefaultHoldTTL = 10 * time.Minute

// HoldState is the state of a Hold, as stored.
type HoldState string

// Hold states.
const (
	HoldHeld     HoldState = "held"     // reserving money for a call in flight
	HoldSettled  HoldState = "settled"  // the call was billed; the hold is gone
	HoldReleased HoldState = "released" // the call was not billed; the hold is gone
)

// Hold is money reserved for one call, up to the call's bill ceiling, from
// admission until the call settles or is released.
type Hold struct {
	ID        string
	OrgID     string
	RequestID string
	Amount    Micros
	State     HoldState
	CreatedAt time.Time
	ExpiresAt time.Time
	// SettledAt is when the hold left HoldHeld (settled or released).
	SettledAt *time.Time
}

// Lane is the way a call was answered: by one engine alone, or by a panel.
type Lane string

// Lanes of a call; their values are the wire's panel.lane and the receipt's
// lane.
const (
	LaneExpress Lane = "express" // one engine answered alone
	LanePanel   Lane = "panel"   // the mode's seats, judged
)

// Receipt is the accounting of one call, as GET /v1/receipts returns it.
// Optional fields the spec allows to be null are pointers, or "" for strings.
type Receipt struct {
	RequestID string
	// TraceID is the OpenTelemetry trace of the call when it was traced
	// (docs/observability.md); "" otherwise.
	TraceID        string
	OrgID          string
	Mode           string // the mode identifier (slug) that ran
	ModeKey        string
	ModeConfigHash string
	// ModeVersion is the released version of an organisation's mode that
	// ran (core.Mode.Version); 0 for a configured mode.
	ModeVersion int
	Status      string

	// Billed is the only per-call money figure; it equals TokenCharge +
	// PlatformFee + Surcharge − CapCredit (see ComputeBill).
	Billed      Micros
	TokenCharge Micros
	Surcharge   Micros
	PlatformFee Micros
	// CapCredit nil means no credit recorded, which is not the same as 0.
	CapCredit *Micros

	PromptTokens     int
	CompletionTokens int
	Rounds           *int // rounds fired
	SeatCount        int  // seats convened
	Payer            string
	Lane             Lane // LaneExpress, LanePanel, or "" when no seat row was recorded
	// PayerKind is the kind of principal that made the call
	// (PrincipalAPIKey, PrincipalSession, PrincipalOAuthApp); KeyID the
	// API key that called ("" for none) and PersonID the person behind the
	// call: the session's or app's person, or the key's creator ("" for
	// an operator's key).
	PayerKind string
	KeyID     string
	PersonID  string
	// FinishReason is the answer's finish reason ("stop", "length",
	// "cost_cap"); Substituted is true when an answer the panel used came
	// from a seat's backup engine.
	FinishReason string
	Substituted  bool

	DifficultyScore       *float64
	TaskType              string
	HallucinationRisk     string
	MinorityInsightLikely *bool

	BestSeat *BestSeat
	Seats    []ReceiptCall
	// Staff are the judge, synthesis and grounding calls.
	Staff            []ReceiptCall
	SeatsUnavailable []Unavailable
	StaffUnavailable []Unavailable

	LatencyMS *int64
	// CreatedAt is when the call was received. Left zero on a receipt being
	// written, it is CompletedAt − LatencyMS when both are set, else the
	// time of writing.
	CreatedAt   time.Time
	CompletedAt *time.Time

	// Response is the full completion response as sent, kept for
	// idempotent replays; nil when not kept. On a receipt whose transcript
	// was not kept it is there only for replays until the idempotency
	// reaper clears it, and is never shown as the receipt's text.
	Response json.RawMessage

	// TranscriptDropped is true when the organisation kept this receipt
	// without prompt and answer text (Org.KeepTranscripts was off when the
	// call settled): its calls and best seat have no Content. Set by the
	// store when it writes the receipt; false for every receipt written
	// before the setting existed.
	TranscriptDropped bool
}

// BestSeat is the seat whose answer was judged best in a call's final
// round: the deliberation's result names it, and the receipt keeps it.
type BestSeat struct {
	// Seat is the seat's role label, "seat-2"; it names no engine.
	Seat string `json:"seat,omitempty"`
	// ModelUsed is the engine that answered for the seat.
	ModelUsed string `json:"model_used"`
	// JudgeScore is the judge's score of the answer, 0 to 1; nil when no
	// judge scored it (the express lane, or the heuristic chose).
	JudgeScore *float64 `json:"judge_score"`
	// Content is the seat's text; shown only with include_transcript=true.
	Content string `json:"content,omitempty"`
}

// Unavailable is a seat or staff role whose engines could not run, and why
// (with what was done instead, for a staff role).
type Unavailable struct {
	// Role is the seat's role label ("seat-3") or the staff role ("judge").
	Role   string `json:"role"`
	Reason string `json:"reason"`
}

// ReceiptCall is one engine call of a receipt: a seat entry, or a staff
// entry (judge, synthesis, grounding).
type ReceiptCall struct {
	Role          string
	ModelUsed     string
	OriginalModel string // the engine replaced, on substitution; "" for none
	FallbackUsed  *bool
	JudgeScore    *float64
	IsBestSeat    *bool
	RoundNumber   *int
	TokensIn      int
	TokensOut     int
	LatencyMS     *int64
	StartedAt     time.Time
	EndedAt       time.Time
	// Source says which source served the call (the service's keys, or the
	// caller's own key).
	Source string
	// RealCost is the cost at the source (CallCost).
	RealCost Micros
	// FeeRatePPM is the platform fee rate in parts per million
	// (FeeRateServicePPM, FeeRateBYOKPPM).
	FeeRatePPM int64
	// Fee is CallFee(RealCost, FeeRatePPM).
	Fee Micros
	// Content is the call's text; shown only with include_transcript=true.
	Content string
	// Answered is true for a call that returned text on a receipt whose
	// transcript was not kept (Content is then empty); otherwise a call
	// answered when it has Content.
	Answered bool
	// The record of the attempt (PEOPLE.md): the seat it served ("" for
	// staff), whether it was a backup raced beside its slow primary, how
	// it ended (Attempt…) and, for a failure, the failure's class.
	Seat       string
	Hedged     bool
	Attempt    string
	ErrorClass string
}

// How one engine call of a deliberation ended, as its receipt records it.
const (
	// AttemptWon: the call answered and its answer was the one used (a
	// seat's answer in its round, the judge's reading, the synthesis).
	AttemptWon = "won"
	// AttemptAnswered: the call answered but another call's answer was
	// used (the loser of a race both finished).
	AttemptAnswered = "answered"
	// AttemptCut: a straggler cancelled when its round closed on quorum.
	AttemptCut = "cut"
	// AttemptCancelled: cancelled otherwise — a hedge race's loser, or a
	// deliberation the caller ended.
	AttemptCancelled = "cancelled"
	// AttemptFailed: the engine failed; ErrorClass says how.
	AttemptFailed = "failed"
)
