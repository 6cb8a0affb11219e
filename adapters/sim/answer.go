package sim

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/conclavehq/conclave/core/genie"
)

// jsonAskRe recognises a prompt that asks for JSON output ("respond with
// JSON", "in JSON", "JSON object"), not one that merely mentions JSON. It
// runs on lower-cased text.
var jsonAskRe = regexp.MustCompile(`\b(respond|reply|answer|return|output|format(?:ted)?|give|produce|emit)\b[^.\n]{0,40}\bjson\b|\bjson\s+(object|only|format|with)\b|\bin\s+json\b|\bas\s+json\b`)

// asksForJSON runs jsonAskRe only around each "json" in text: a prompt can
// be long, and the regular expression is not cheap.
func asksForJSON(text string) bool {
	low := strings.ToLower(text)
	for off := 0; ; {
		i := strings.Index(low[off:], "json")
		if i < 0 {
			return false
		}
		i += off
		if jsonAskRe.MatchString(low[max(0, i-80):min(len(low), i+24)]) {
			return true
		}
		off = i + len("json")
	}
}

// synthesisLead opens the system prompt of Conclave's synthesis call
// (core/deliberate): a prompt whose answer is the panel's one answer.
const synthesisLead = "You write the panel's one answer."

// answer writes the answer text of a call: a verdict when the prompt is a
// pairwise or plurality judge prompt; a classification when the prompt
// asks for classifier JSON; judge JSON when the prompt holds answer blocks
// and asks for JSON; a synthesis or a revision when it holds answer blocks;
// otherwise an answer to the question. Answers, revisions and syntheses
// come with the record the judges will read.
func (s *Server) answer(ctx context.Context, c *call, prof EngineProfile, d directives) (string, *AnswerRecord) {
	if strings.HasPrefix(c.system, genie.ProposeLead) {
		return proposeReply(c.system, stripDirectives(c.lastUser()), d.propose), nil
	}
	full := stripDirectives(c.text())
	if p := judgeProtocol(full); p != "" {
		return s.judgeReply(c, p, prof), nil
	}
	wantJSON := c.jsonMode || asksForJSON(full)
	if wantJSON && asksToClassify(full) {
		return classifyJSON(ctx, c.lastUser()), nil
	}
	head, blocks := answerBlocks(full)
	if len(blocks) > 0 {
		q := questionIn(head)
		if wantJSON {
			return judgeJSON(q, blocks, s.cfg.Seed, c.model), nil
		}
		var rec *AnswerRecord
		asked := askedQuestion(c, q)
		if strings.HasPrefix(c.system, synthesisLead) {
			asked = synthesisQuestion(head)
			rec = s.synthesisRecord(ctx, c.model, prof, asked, d.bucket, blocks)
		} else {
			rec = s.answerRecord(ctx, c.model, prof, asked, d.bucket, KindRevision)
		}
		return s.written(asked, q, c.model, prof, full, blocks, rec), rec
	}
	question := stripDirectives(c.lastUser())
	if wantJSON {
		b, _ := json.Marshal(struct {
			Answer string `json:"answer"`
		}{s.compose(question, c.model, prof, full, nil)})
		return string(b), nil
	}
	rec := s.answerRecord(ctx, c.model, prof, question, d.bucket, KindAnswer)
	return s.written(question, question, c.model, prof, full, nil, rec), rec
}

// written is the text of the answer rec records to asked: for a verifiable
// item of the question bank, its reference answer or a wrong one, as
// rec.Correct says (verifiableText); otherwise compose's answer to
// question, the question found in the prompt.
func (s *Server) written(asked, question, model string, prof EngineProfile, prompt string, blocks []answerBlock, rec *AnswerRecord) string {
	if rec.Verifiable {
		if it, ok := bankItem(asked); ok {
			return s.verifiableText(it, rec, model, prof.Style)
		}
	}
	return s.compose(question, model, prof, prompt, blocks)
}

// askedQuestion is the question a critique prompt asks a seat to answer
// again: the last user message that quotes no answers, as Conclave's
// critique prompt follows the caller's conversation; else inPrompt, the
// question found before the answers.
func askedQuestion(c *call, inPrompt string) string {
	for i := len(c.messages) - 1; i >= 0; i-- {
		m := c.messages[i]
		if m.role == "user" && !strings.Contains(m.text, answerMarker) {
			return stripDirectives(m.text)
		}
	}
	return inPrompt
}

// synthesisQuestion is the question of a synthesis prompt: what follows
// its "Question:" line, up to the first answer block.
func synthesisQuestion(head string) string {
	if _, q, ok := strings.Cut(head, "Question:\n"); ok {
		return strings.TrimSpace(q)
	}
	return questionIn(head)
}

// compose answers a question: exactly when solve can, otherwise in prose
// whose conclusion follows the engine's stance or, when earlier answers
// are in the prompt, usually their majority.
func (s *Server) compose(question, model string, prof EngineProfile, prompt string, blocks []answerBlock) string {
	if sol, ok := solve(question); ok {
		return styleSolution(prof.Style, sol)
	}
	sh := analyze(question)
	concl := stance(sh, s.cfg.Seed, model, question, prof.Dissent)
	if len(blocks) > 0 {
		if maj := majorityKey(blocks); maj != "" {
			r := seeded(s.cfg.Seed, "revise", model, digest(prompt))
			if r.Float64() >= prof.Dissent/2 {
				concl = maj
			}
		}
	}
	r := seeded(s.cfg.Seed, "prose", model, digest(prompt))
	target := prof.OutputTokensMin
	if prof.OutputTokensMax > target {
		target += r.IntN(prof.OutputTokensMax - target + 1)
	}
	return writeProse(prof.Style, sh, concl, r, target)
}

// styleSolution words an exact answer in the engine's style, keeping the
// result where conclusionKey finds it: a yes/no first, a number last.
func styleSolution(style string, sol solution) string {
	switch style {
	case "terse":
		return sol.terse
	case "structured":
		return sol.statement + "\n\n(Checked step by step.)"
	case "thorough":
		return sol.statement + " I double-checked the working."
	case "nuanced":
		return sol.statement + " The question leaves no room for interpretation."
	}
	return sol.statement
}
