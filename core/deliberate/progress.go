package deliberate

import (
	"fmt"

	"github.com/conclavehq/conclave/core"
)

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

// Describe is the step as a person reads it: "Round 1 started: 3 seats
// answering." — the tool server's progress messages and the playground's
// timeline of a call still running.
func (p Progress) Describe() string {
	switch p.Stage {
	case StageClassified:
		if p.Lane == core.LaneExpress {
			return fmt.Sprintf("Classified as a %s question: the express lane answers it alone.", p.Depth)
		}
		return fmt.Sprintf("Classified as a %s question: convening the panel.", p.Depth)
	case StageRoundStarted:
		return fmt.Sprintf("Round %d started: %d seats answering.", p.Round, p.Seats)
	case StageSeatAnswered:
		return fmt.Sprintf("Round %d: %s answered (%d of %d).", p.Round, p.Seat, p.Answered, p.Seats)
	case StageJudged:
		return fmt.Sprintf("Round %d judged (%d answers).", p.Round, p.Answered)
	case StageSynthesising:
		return "Synthesising the answer."
	}
	return "Deliberating."
}
