// Package pairwise is the "pairwise" judging protocol: a judge reads one
// question and exactly two anonymised answers, shown as "Answer 1" and
// "Answer 2" in the task's order, and says which is better or that neither
// is. It is the protocol of test runs and certification (docs/judging.md):
// the host judges each pair in both orders, so the judges' position bias
// cancels.
//
// # Prompt
//
// Plan returns one prompt, id "pairwise", with JSONOutput set. Its system
// text is fixed; its first line, "Conclave judge · pairwise · v1", names the
// protocol and the prompt's version (a certificate records it, and the
// simulated provider recognises judge prompts by it). It carries the
// rubric — correctness, completeness, honesty about uncertainty, no credit
// for length — says that the judge runs at temperature 0 (the host sets the
// temperature), and gives the reply format. The user text is
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
//	[Answer 2]
//	<second answer>
//
//	[End of answers]
//	Which answer is better, Answer 1 or Answer 2? Reply with the JSON object only.
//
// where the reference block appears only when the task carries a reference
// answer. Answer ids never appear in the prompt. A line of the question,
// reference or answers that would read as a marker (starting "[Answer ",
// "[End of answers" or "[Reference answer", after leading spaces) is
// quoted with "> ".
//
// # Reply and scoring
//
// The judge must reply with exactly one JSON object,
//
//	{"verdict": "1" | "2" | "tie", "reason": "<one sentence>"}
//
// with both keys, no other key, string values, and nothing around it but
// whitespace. Anything else — prose, a code fence, a number for a verdict,
// a missing reason — is unreadable: Score counts it and the host may ask
// again. Each readable verdict gives the winner 1 and the loser 0, or each
// answer 0.5 on a tie; an answer's score is its mean over the readable
// verdicts, rounded to six decimal places. Best is the answer with the
// higher score, "" when the scores are equal or nothing was readable.
// Divergence and Converged are never set.
//
// The protocol is pure, deterministic (it makes no choice a seed would
// decide) and safe for concurrent use.
package pairwise

import (
	"context"
	"errors"
	"fmt"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/protocol/internal/judgetext"
)

const (
	protocolName    = "pairwise"
	protocolVersion = "1.0.0"
	// PromptID is the id of the protocol's one prompt.
	PromptID = "pairwise"
	// FirstLine is the system prompt's first line: the protocol and the
	// version of its prompt.
	FirstLine = "Conclave judge · pairwise · v1"
	// Verdicts a judge may give.
	VerdictFirst  = "1"
	VerdictSecond = "2"
	VerdictTie    = "tie"
)

// system is the judge's brief. It names no answer, so it never changes.
const system = FirstLine + `
You are an impartial judge. Two answers to one question follow, shown as "Answer 1" and "Answer 2". Decide which answer is better, or that neither is. You are run at temperature 0: give the one verdict a careful reading supports.

` + judgetext.Rubric + `

Reply with one JSON object only, with no prose and no code fences:
{"verdict":"1","reason":"<one sentence>"}
verdict is "1" when Answer 1 is better, "2" when Answer 2 is better, "tie" when neither is better; reason says why in one sentence.`

const closing = "Which answer is better, Answer 1 or Answer 2? Reply with the JSON object only."

// Protocol is the pairwise judging protocol. The zero value is ready to use
// and safe for concurrent use.
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
	return &core.JudgePlan{Prompts: []core.JudgePrompt{{
		ID: PromptID, System: system, User: judgetext.User(task, closing), JSONOutput: true,
	}}}, nil
}

func checkTask(task *core.JudgeTask) error {
	if task == nil {
		return errors.New("pairwise: no task")
	}
	if n := len(task.Answers); n != 2 {
		return fmt.Errorf("pairwise: judges exactly two answers, not %d", n)
	}
	if err := judgetext.CheckAnswers(task.Answers); err != nil {
		return fmt.Errorf("pairwise: %w", err)
	}
	return nil
}

// Read returns the verdict of a judge's reply — VerdictFirst,
// VerdictSecond or VerdictTie — or false when the reply is unreadable.
func Read(text string) (string, bool) {
	v, ok := judgetext.Object(text, "verdict", "reason")
	if !ok {
		return "", false
	}
	if _, ok := judgetext.String(v["reason"]); !ok {
		return "", false
	}
	verdict, ok := judgetext.String(v["verdict"])
	if !ok {
		return "", false
	}
	switch verdict {
	case VerdictFirst, VerdictSecond, VerdictTie:
		return verdict, true
	}
	return "", false
}

// Score implements core.Protocol.
func (*Protocol) Score(_ context.Context, in *core.JudgeVerdicts) (*core.JudgeScores, error) {
	if in == nil {
		return nil, errors.New("pairwise: no verdicts")
	}
	if err := checkTask(&in.Task); err != nil {
		return nil, err
	}
	out := &core.JudgeScores{Scores: map[string]float64{}}
	var first float64
	readable := 0
	for _, vd := range in.Verdicts {
		verdict, ok := "", vd.PromptID == "" || vd.PromptID == PromptID
		if ok {
			verdict, ok = Read(vd.Text)
		}
		if !ok {
			out.Unreadable++
			continue
		}
		readable++
		switch verdict {
		case VerdictFirst:
			first++
		case VerdictTie:
			first += 0.5
		}
	}
	if readable == 0 {
		return out, nil
	}
	a, b := in.Task.Answers[0].ID, in.Task.Answers[1].ID
	sa := judgetext.Round(first / float64(readable))
	sb := judgetext.Round(1 - sa)
	out.Scores[a], out.Scores[b] = sa, sb
	switch {
	case sa > sb:
		out.Best = a
	case sb > sa:
		out.Best = b
	}
	return out, nil
}

var _ core.Protocol = (*Protocol)(nil)
