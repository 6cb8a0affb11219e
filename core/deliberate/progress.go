package deliberate

import "github.com/conclavehq/conclave/core"

// Stage is a step a deliberation reaches.
type Stage string

// The stages Request.Observe is told of, in the order a deliberation
// reaches them (rounds repeat the middle three).
const (
	// StageClassified: the question is classified and its lane chosen.
	StageClassified Stage = "classified"
	// StageRoundStarted: a round's seats were asked.
	StageRoundStarted Stage = "round_started"
	// StageSeatAnswered: one seat answered in a round.
	StageSeatAnswered Stage = "seat_answered"
	// StageJudged: the judge (or the heuristic) read a round.
	StageJudged Stage = "judged"
	// StageSynthesising: the synthesis of the answer started.
	StageSynthesising Stage = "synthesising"
)

// Progress is one step of a deliberation, as Request.Observe is told it.
type Progress struct {
	Stage Stage
	// Depth and Lane are the classification's (StageClassified).
	Depth core.Depth
	Lane  core.Lane
	// Round is the round's number (StageRoundStarted, StageSeatAnswered,
	// StageJudged).
	Round int
	// Seats is how many seats the round asked; Answered how many have
	// answered so far (StageSeatAnswered), Seat the one that just did.
	Seats    int
	Answered int
	Seat     string
}

// observe tells the request's observer, if it has one, of a step.
func (req *Request) observe(p Progress) {
	if req.Observe != nil {
		req.Observe(p)
	}
}
