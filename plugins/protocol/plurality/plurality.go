// Package plurality is the "plurality" judging protocol: a judge reads one
// question and two or more anonymised answers, shown as "Answer 1" to
// "Answer N" in the task's order, and votes for the best. Scores are vote
// shares (docs/judging.md says how a run maps them onto the pairwise
// scale; a share is never compared with 0.5).
//
// # Prompt
//
// Plan returns one prompt, id "plurality", with JSONOutput set. Its system
// text is fixed; its first line, "Conclave judge · plurality · v1", names
// the protocol and the prompt's version. It carries the same rubric as the
// pairwise protocol — correctness, completeness, honesty about
// uncertainty, no credit for length — says that the judge runs at
// temperature 0, and gives the reply format. The user text is
//
//	Question:
//	<question>
//
//	[Reference answer]
//	<reference>
//
//	[Answer 1]
//	<first answer>
//
//	…
//
//	[Answer N]
//	<last answer>
//
//	[End of answers]
//	Vote for the best of Answer 1 to Answer N. Reply with the JSON object only.
//
// with the reference block only when the task carries one, and marker
// lines inside the texts quoted with "> " as in the pairwise protocol.
//
// # Reply and scoring
//
// The judge must reply with exactly one JSON object,
//
//	{"best": "<label>", "reason": "<one sentence>"}
//
// where the label is an answer's number as a string ("1" to "N"), with
// both keys, no other key, string values, and nothing around it but
// whitespace; anything else is unreadable. Each answer's score is its share
// of the readable votes (0 for an answer nobody chose), rounded to six
// decimal places; Scores is empty when no vote was readable. Best is the
// answer with the most votes, "" when the top is shared or nothing was
// readable. Divergence and Converged are never set.
//
// The protocol is pure, deterministic and safe for concurrent use.
package plurality

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/protocol/internal/judgetext"
)

const (
	protocolName    = "plurality"
	protocolVersion = "1.0.0"
	// PromptID is the id of the protocol's one prompt.
	PromptID = "plurality"
	// FirstLine is the system prompt's first line: the protocol and the
	// version of its prompt.
	FirstLine = "Conclave judge · plurality · v1"
)

// system is the judge's brief. It names no answer and no count, so it never
// changes.
const system = FirstLine + `
You are an impartial judge. Several answers to one question follow, shown as "Answer 1", "Answer 2" and so on. Vote for the one best answer. You are run at temperature 0: give the one vote a careful reading supports.

` + judgetext.Rubric + `

Reply with one JSON object only, with no prose and no code fences:
{"best":"1","reason":"<one sentence>"}
best is the number of the best answer, as a string ("1" for Answer 1); reason says why in one sentence.`

// Protocol is the plurality judging protocol. The zero value is ready to
// use and safe for concurrent use.
type Protocol struct{}

// New returns a Protocol.
func New() *Protocol { return &Protocol{} }

// Describe implements core.Protocol.
func (*Protocol) Describe(context.Context) (*core.ProtocolInfo, error) {
	return &core.ProtocolInfo{Name: protocolName, Version: protocolVersion}, nil
}

// Plan implements core.Protocol.
func (*Protocol) Plan(_ context.Context, task *core.JudgeTask) (*core.JudgePlan, error) {
	if err := checkTask(task); err != nil {
		return nil, err
	}
	n := len(task.Answers)
	closing := fmt.Sprintf("Vote for the best of Answer 1 to Answer %d. Reply with the JSON object only.", n)
	return &core.JudgePlan{Prompts: []core.JudgePrompt{{
		ID: PromptID, System: system, User: judgetext.User(task, closing), JSONOutput: true,
	}}}, nil
}

func checkTask(task *core.JudgeTask) error {
	if task == nil {
		return errors.New("plurality: no task")
	}
	if n := len(task.Answers); n < 2 {
		return fmt.Errorf("plurality: needs at least two answers, not %d", n)
	}
	if err := judgetext.CheckAnswers(task.Answers); err != nil {
		return fmt.Errorf("plurality: %w", err)
	}
	return nil
}

// Read returns the index (0 for Answer 1) of the answer a judge's reply
// votes for among n, or false when the reply is unreadable.
func Read(text string, n int) (int, bool) {
	v, ok := judgetext.Object(text, "best", "reason")
	if !ok {
		return 0, false
	}
	if _, ok := judgetext.String(v["reason"]); !ok {
		return 0, false
	}
	label, ok := judgetext.String(v["best"])
	if !ok {
		return 0, false
	}
	k, err := strconv.Atoi(label)
	// Only the canonical label: "01", "+1" and " 1" are not labels.
	if err != nil || k < 1 || k > n || judgetext.Label(k-1) != label {
		return 0, false
	}
	return k - 1, true
}

// Score implements core.Protocol.
func (*Protocol) Score(_ context.Context, in *core.JudgeVerdicts) (*core.JudgeScores, error) {
	if in == nil {
		return nil, errors.New("plurality: no verdicts")
	}
	if err := checkTask(&in.Task); err != nil {
		return nil, err
	}
	answers := in.Task.Answers
	votes := make([]int, len(answers))
	out := &core.JudgeScores{Scores: map[string]float64{}}
	readable := 0
	for _, vd := range in.Verdicts {
		i, ok := 0, vd.PromptID == "" || vd.PromptID == PromptID
		if ok {
			i, ok = Read(vd.Text, len(answers))
		}
		if !ok {
			out.Unreadable++
			continue
		}
		votes[i]++
		readable++
	}
	if readable == 0 {
		return out, nil
	}
	top, shared := -1, false
	for i, a := range answers {
		out.Scores[a.ID] = judgetext.Round(float64(votes[i]) / float64(readable))
		switch {
		case top < 0 || votes[i] > votes[top]:
			top, shared = i, false
		case votes[i] == votes[top]:
			shared = true
		}
	}
	if !shared {
		out.Best = answers[top].ID
	}
	return out, nil
}

var _ core.Protocol = (*Protocol)(nil)
