package deliberate

import (
	"time"

	"github.com/conclavehq/conclave/core"
)

// Finish reasons of a deliberation.
const (
	FinishStop    = "stop"     // the deliberation ran to its end
	FinishCostCap = "cost_cap" // a critique round was skipped: it would have passed the mode's cost ceiling or the call's budget
	FinishLength  = "length"   // the answer was cut off
)

// Who chose the best seat.
const (
	JudgedByExpressLane = "express_lane"
	JudgedByHeuristic   = "heuristic"
	JudgedByLLM         = "llm"
)

// How a seat's part in a round ended.
const (
	ClosedByAnswered    = "answered"     // the seat answered
	ClosedByQuorum      = "quorum_close" // the round closed on quorum before the seat answered
	ClosedByUnavailable = "unavailable"  // the seat's primary and backup both failed
	ClosedByCancelled   = "cancelled"    // the caller cancelled the deliberation
)

// Why a round closed.
const (
	RoundAllAnswered = "all_answered" // every seat answered or gave up
	RoundQuorum      = "quorum"       // a quorum answered and the straggler deadline passed
)

// Call roles that are not seats ("seat-N").
const (
	RoleJudge      = "judge"
	RoleSynthesis  = "synthesis"
	RoleClassifier = "classifier"
	RoleHedge      = "hedge"
)

// Outcome is how one engine call ended: OutcomeOK, OutcomeCancelled, or
// the failure's core.ErrorClass ("overloaded", "malformed", …).
type Outcome string

// Call outcomes besides an error class.
const (
	OutcomeOK        Outcome = "ok"
	OutcomeCancelled Outcome = "cancelled"
)

// Result is what one deliberation produced: the answer and the account of
// how it was reached, for the response's panel object and the receipt.
type Result struct {
	// Answer is the text returned to the caller.
	Answer string `json:"answer"`
	// Finish is FinishStop, FinishCostCap or FinishLength.
	Finish string `json:"finish"`
	// Lane is core.LaneExpress or core.LanePanel.
	Lane core.Lane `json:"lane"`
	// Classification is how hard the question was judged to be.
	Classification Classification `json:"classification"`
	// Seats is how many seats were convened (1 on the express lane).
	Seats int `json:"seats"`
	// SeatsAnswered is how many seats answered in the final round.
	SeatsAnswered int `json:"seats_answered"`
	// Converged is the judge's reading of the final round; nil on the
	// express lane or when no judge verdict could be read.
	Converged *bool `json:"converged"`
	// RemainingFriction is "factual_conflict" when the final round's judge
	// flagged one, otherwise nil.
	RemainingFriction *string `json:"remaining_friction"`
	// ContestedPassage is the passage that carried the split in the final
	// round, when the judge named one.
	ContestedPassage *ContestedPassage `json:"contested_passage"`
	// BestSeat is the seat whose answer was judged best in the final round,
	// with its text.
	BestSeat core.BestSeat `json:"best_seat"`
	// BestSeatJudgedBy is JudgedByExpressLane, JudgedByHeuristic or JudgedByLLM.
	BestSeatJudgedBy string `json:"best_seat_judged_by"`
	// BestSeatRationale is one sentence on which seat won and why; it names
	// seats by role, never engines.
	BestSeatRationale string `json:"best_seat_rationale"`
	// DivergenceFirstRound and DivergenceFinalRound are the judge's
	// divergence readings; nil when no judgment recorded one.
	DivergenceFirstRound *float64 `json:"divergence_first_round"`
	DivergenceFinalRound *float64 `json:"divergence_final_round"`
	// Rounds has one entry per round run.
	Rounds []Round `json:"deliberation"`
	// Engines lists the engines that were sent the prompt: seat engines in
	// seat order (primary before backup), then staff engines in the order
	// they were called; without repeats.
	Engines []string `json:"engines"`
	// Substitutions lists seats whose answer came from their backup.
	Substitutions []Substitution `json:"substitutions"`
	// SeatsUnavailable lists seats that could not run at all.
	SeatsUnavailable []core.Unavailable `json:"seats_unavailable,omitempty"`
	// StaffUnavailable lists staff roles (judge, synthesis, classifier) whose
	// engines could not run, and what was done instead.
	StaffUnavailable []core.Unavailable `json:"staff_unavailable,omitempty"`
	// Calls is every engine call made, in the order they started.
	Calls []Call `json:"calls"`
	// Usage sums the tokens of every call.
	Usage Usage `json:"usage"`
	// Cost is the sum of every call's cost at the source.
	Cost core.Micros `json:"cost_micros"`
}

// Classification is a classify.Result with JSON tags.
type Classification struct {
	Score             float64    `json:"score"`
	Depth             core.Depth `json:"depth"`
	TaskType          string     `json:"task_type"`
	HallucinationRisk string     `json:"hallucination_risk"`
	// By is the basis of the classification: the classifier engine's id
	// when it answered, "heuristic" when the fallback classified.
	By string `json:"by"`
}

// ContestedPassage is a quote from one seat's answer that carried the split.
type ContestedPassage struct {
	Seat  string `json:"seat"` // the seat's role label, "seat-2"
	Quote string `json:"quote"`
	Why   string `json:"why"`
}

// Round is one pass of the seats.
type Round struct {
	Number int        `json:"round"`
	Seats  []SeatTurn `json:"seats"`
	// Judgment is the reading of the round; nil on the express lane.
	Judgment *Judgment `json:"judgment,omitempty"`
	// Closed is RoundAllAnswered or RoundQuorum.
	Closed string `json:"closed"`
	// Cost is what the round's calls (seats, hedges and judge) cost.
	Cost     core.Micros   `json:"cost_micros"`
	Duration time.Duration `json:"duration_ns"`
}

// SeatTurn is one seat's part in a round.
type SeatTurn struct {
	Seat string `json:"seat"`
	// Engine answered for the seat; for a seat that did not answer, the
	// engine it was last waiting on.
	Engine   string `json:"engine"`
	Answered bool   `json:"answered"`
	// ClosedBy is ClosedByAnswered, ClosedByQuorum, ClosedByUnavailable or
	// ClosedByCancelled.
	ClosedBy string `json:"closed_by"`
	// Hedged is true when the seat's backup was started beside a slow primary.
	Hedged bool `json:"hedged"`
	// Finish is the answer's finish reason.
	Finish string `json:"finish,omitempty"`
}

// Judgment summarises the reading of one round.
type Judgment struct {
	// By is JudgedByLLM or JudgedByHeuristic.
	By string `json:"by"`
	// Best is the best seat's role.
	Best string `json:"best"`
	// Scores by seat role (the judge's, or the heuristic's mean similarity).
	Scores          map[string]float64 `json:"scores"`
	Divergence      *float64           `json:"divergence"`
	Converged       *bool              `json:"converged"`
	FactualConflict bool               `json:"factual_conflict"`
}

// Substitution is a seat whose answer came from its backup engine.
type Substitution struct {
	Seat     string `json:"seat"`
	Original string `json:"original"`
	Used     string `json:"used"`
	Reason   string `json:"reason"`
}

// Call is one engine call.
type Call struct {
	// Role is "seat-N", RoleHedge (a seat's backup raced against its slow
	// primary), RoleJudge, RoleSynthesis or RoleClassifier.
	Role string `json:"role"`
	// Seat is the seat a seat or hedge call served; "" for staff.
	Seat string `json:"seat,omitempty"`
	// Round is the round the call belongs to; 0 for the classifier, and the
	// last round for synthesis.
	Round  int    `json:"round"`
	Engine string `json:"engine"`
	// Original is the primary engine when this call ran a backup.
	Original string `json:"original,omitempty"`
	// Fallback is true when this call ran a backup engine.
	Fallback bool `json:"fallback"`
	// Hedged is true on a staff role's backup started beside its slow
	// primary (a seat's such call has Role RoleHedge instead).
	Hedged          bool        `json:"hedged,omitempty"`
	InputTokens     int         `json:"input_tokens"`
	OutputTokens    int         `json:"output_tokens"`
	ReasoningTokens int         `json:"reasoning_tokens"`
	Cost            core.Micros `json:"cost_micros"`
	Started         time.Time   `json:"started"`
	Ended           time.Time   `json:"ended"`
	// Source says whose credential served the call: core.SourceService
	// ("service"), or core.SourceBYOK(provider) ("byok:openai", "byok:aws")
	// for a seat call run on the paying organisation's own provider
	// credential, whose token cost the organisation pays its provider
	// (core.IsBYOKSource). Staff calls are always "service".
	Source string `json:"source"`
	// Outcome is OutcomeOK, OutcomeCancelled or the failure's error class.
	Outcome Outcome `json:"outcome"`
	// Finish is the provider's finish reason of an answered call.
	Finish string `json:"finish,omitempty"`
	// Content is the answer's text, for the receipt's transcript.
	Content string `json:"content,omitempty"`
}

// Usage is tokens summed over calls.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	ReasoningTokens  int `json:"reasoning_tokens"`
}
