package bench

import (
	"errors"
	"fmt"
)

// Bucket is a question's difficulty bucket.
type Bucket string

// Buckets.
const (
	BucketLight  Bucket = "light"
	BucketMedium Bucket = "medium"
	BucketHard   Bucket = "hard"
)

// Buckets lists the buckets, lightest first; reports list them in this order.
var Buckets = []Bucket{BucketLight, BucketMedium, BucketHard}

func (b Bucket) index() int {
	switch b {
	case BucketLight:
		return 0
	case BucketMedium:
		return 1
	case BucketHard:
		return 2
	}
	return -1
}

// Kind says what a run is for.
type Kind string

// Kinds.
const (
	// KindTest is a test run (POST /v1/tests): it reports the same figures
	// as a certification but shows a verdict only on a large enough sample.
	KindTest Kind = "test"
	// KindCertify is a certification run (POST /v1/certify).
	KindCertify Kind = "certify"
)

// Protocol is how the judges compared the answers.
type Protocol string

// Protocols.
const (
	// Pairwise judges see the mode's and the baseline's answers and say
	// which is better, or a tie.
	Pairwise Protocol = "pairwise"
	// Plurality judges see N answers (the mode's, the baseline's and
	// others) and vote for the best one.
	Plurality Protocol = "plurality"
)

// Outcome is what one pairwise judgment found, in the mode's terms: the
// answer positions are already undone.
type Outcome string

// Outcomes.
const (
	ModeWin     Outcome = "mode_win"
	Tie         Outcome = "tie"
	BaselineWin Outcome = "baseline_win"
	// Missing is a judgment that was planned but gave no verdict (a parse
	// failure after its retry, a judge that did not answer). A planned
	// judgment absent from Run.Judgments counts as missing too.
	Missing Outcome = "missing"
	// Neither is a plurality vote for an answer that is neither the mode's
	// nor the baseline's. Score derives it from Judgment.Vote.
	Neither Outcome = "neither"
)

// score is the outcome on the win-rate scale: a win 1, a tie (or a
// plurality vote for neither) ½, a loss 0. For plurality this is the mapping
// W = ½ + ½(share_mode − share_baseline) applied to one vote.
func (o Outcome) score() (float64, bool) {
	switch o {
	case ModeWin:
		return 1, true
	case Tie, Neither:
		return 0.5, true
	case BaselineWin:
		return 0, true
	}
	return 0, false
}

// Judge is one judge of a run.
type Judge struct {
	// ID names the judge: "nova_pro", "mistral_large", "llama4_maverick".
	ID string `json:"id"`
	// Family is the judge's vendor family ("amazon", "mistral", "meta"),
	// by which self-preference is read.
	Family string `json:"family"`
}

// Question is one drawn question and the two answers the judges compared.
type Question struct {
	// Bucket is the question's difficulty bucket.
	Bucket Bucket `json:"bucket"`
	// Template is the bank template the item was generated from. Questions
	// that share a template are one cluster for the standard error; empty
	// makes the question its own cluster.
	Template string `json:"template,omitempty"`
	// ModeLength and BaselineLength are the lengths of the two answers as
	// the judges saw them (after anonymising), in one unit for the whole
	// run (tokens or characters).
	ModeLength     int `json:"mode_length"`
	BaselineLength int `json:"baseline_length"`
	// Verifiable marks an item with a machine-checked answer; ModeCorrect
	// and BaselineCorrect are then the programmatic check of each answer.
	Verifiable      bool `json:"verifiable,omitempty"`
	ModeCorrect     bool `json:"mode_correct,omitempty"`
	BaselineCorrect bool `json:"baseline_correct,omitempty"`
}

// Judgment is one judge's verdict on one question in one repeat.
type Judgment struct {
	// Question is the index of the question in Run.Questions.
	Question int `json:"question"`
	// Judge is the Judge.ID of a judge in Run.Judges.
	Judge string `json:"judge"`
	// Repeat counts from 1 to Run.Repeats.
	Repeat int `json:"repeat"`
	// ModePosition is the position, from 1, the mode's answer held in what
	// the judge saw.
	ModePosition int `json:"mode_position"`
	// Outcome is the pairwise verdict. Plurality runs leave it empty (or
	// Missing) and give Vote.
	Outcome Outcome `json:"outcome,omitempty"`
	// BaselinePosition (plurality) is the position the baseline's answer
	// held.
	BaselinePosition int `json:"baseline_position,omitempty"`
	// Vote (plurality) is the position the judge voted for; 0 when the
	// judgment is missing.
	Vote int `json:"vote,omitempty"`
}

// Provenance is what a report records about how its run was made, so that
// it can be reproduced. Score copies it into the report unread.
type Provenance struct {
	BaselineID         string `json:"baseline_id,omitempty"`
	JudgePromptVersion string `json:"judge_prompt_version,omitempty"`
	QuestionSeed       string `json:"question_seed,omitempty"`
	BankVersion        string `json:"bank_version,omitempty"`
}

// Run is the scored data of one test or certification run.
type Run struct {
	Kind     Kind     `json:"kind"`
	Protocol Protocol `json:"protocol"`
	// Attempt is the number of this certification attempt for the mode
	// version, from 1; the verdict's critical value is adjusted for it.
	// 0 counts as 1.
	Attempt int `json:"attempt,omitempty"`
	// Judges are the run's judges; Repeats how many times each judge saw
	// each question. Together with Questions they fix the planned
	// judgments: len(Questions) × len(Judges) × Repeats.
	Judges  []Judge `json:"judges"`
	Repeats int     `json:"repeats"`
	// Answers is the number of answers a plurality judge saw (N ≥ 2).
	Answers    int        `json:"answers,omitempty"`
	Questions  []Question `json:"questions"`
	Judgments  []Judgment `json:"judgments"`
	Provenance Provenance `json:"provenance"`
}

// ErrInvalidRun is wrapped by every error Score returns for a run whose data
// do not hold together (an unknown judge, a question index out of range, a
// judgment given twice, …).
var ErrInvalidRun = errors.New("invalid run")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidRun, fmt.Sprintf(format, args...))
}

// check validates r and returns, for each judgment, the index of its judge.
func (r *Run) check() ([]int, error) {
	switch r.Kind {
	case KindTest, KindCertify:
	default:
		return nil, invalid("kind: %q is not test or certify", r.Kind)
	}
	switch r.Protocol {
	case Pairwise:
	case Plurality:
		if r.Answers < 2 {
			return nil, invalid("answers: a plurality run needs at least 2, got %d", r.Answers)
		}
	default:
		return nil, invalid("protocol: %q is not pairwise or plurality", r.Protocol)
	}
	if r.Attempt < 0 {
		return nil, invalid("attempt: %d is negative", r.Attempt)
	}
	if len(r.Judges) == 0 {
		return nil, invalid("judges: none")
	}
	if r.Repeats < 1 {
		return nil, invalid("repeats: %d is less than 1", r.Repeats)
	}
	for i, j := range r.Judges {
		if j.ID == "" {
			return nil, invalid("judges[%d].id: empty", i)
		}
		for _, k := range r.Judges[:i] {
			if k.ID == j.ID {
				return nil, invalid("judges[%d].id: %q given twice", i, j.ID)
			}
		}
	}
	for i, q := range r.Questions {
		if q.Bucket.index() < 0 {
			return nil, invalid("questions[%d].bucket: %q is not light, medium or hard", i, q.Bucket)
		}
		if q.ModeLength < 0 || q.BaselineLength < 0 {
			return nil, invalid("questions[%d]: negative answer length", i)
		}
	}
	judgeOf := make([]int, len(r.Judgments))
	seen := make([]bool, len(r.Questions)*len(r.Judges)*r.Repeats)
	for i, j := range r.Judgments {
		if j.Question < 0 || j.Question >= len(r.Questions) {
			return nil, invalid("judgments[%d].question: %d is out of range", i, j.Question)
		}
		judgeOf[i] = -1
		for k, jj := range r.Judges {
			if jj.ID == j.Judge {
				judgeOf[i] = k
			}
		}
		if judgeOf[i] < 0 {
			return nil, invalid("judgments[%d].judge: %q is not one of the run's judges", i, j.Judge)
		}
		if j.Repeat < 1 || j.Repeat > r.Repeats {
			return nil, invalid("judgments[%d].repeat: %d is not in 1..%d", i, j.Repeat, r.Repeats)
		}
		key := (j.Question*len(r.Judges)+judgeOf[i])*r.Repeats + j.Repeat - 1
		if seen[key] {
			return nil, invalid("judgments[%d]: question %d, judge %q, repeat %d given twice", i, j.Question, j.Judge, j.Repeat)
		}
		seen[key] = true
		if err := r.checkPositions(i, j); err != nil {
			return nil, err
		}
	}
	return judgeOf, nil
}

func (r *Run) checkPositions(i int, j Judgment) error {
	if r.Protocol == Pairwise {
		if j.ModePosition != 1 && j.ModePosition != 2 {
			return invalid("judgments[%d].mode_position: %d is not 1 or 2", i, j.ModePosition)
		}
		if _, ok := j.Outcome.score(); !ok && j.Outcome != Missing || j.Outcome == Neither {
			return invalid("judgments[%d].outcome: %q is not mode_win, tie, baseline_win or missing", i, j.Outcome)
		}
		return nil
	}
	n := r.Answers
	if j.ModePosition < 1 || j.ModePosition > n || j.BaselinePosition < 1 || j.BaselinePosition > n ||
		j.ModePosition == j.BaselinePosition {
		return invalid("judgments[%d]: mode_position %d and baseline_position %d must be distinct positions in 1..%d",
			i, j.ModePosition, j.BaselinePosition, n)
	}
	if j.Vote < 0 || j.Vote > n {
		return invalid("judgments[%d].vote: %d is not in 0..%d", i, j.Vote, n)
	}
	if j.Outcome != "" && j.Outcome != j.pluralityOutcome() {
		return invalid("judgments[%d].outcome: %q disagrees with vote %d", i, j.Outcome, j.Vote)
	}
	return nil
}

// outcome is the judgment's outcome under the run's protocol.
func (j *Judgment) outcome(p Protocol) Outcome {
	if p == Plurality {
		return j.pluralityOutcome()
	}
	return j.Outcome
}

func (j *Judgment) pluralityOutcome() Outcome {
	switch j.Vote {
	case 0:
		return Missing
	case j.ModePosition:
		return ModeWin
	case j.BaselinePosition:
		return BaselineWin
	}
	return Neither
}
