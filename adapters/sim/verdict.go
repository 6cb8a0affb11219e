package sim

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"

	"github.com/conclavehq/conclave/core/bench/bank"
)

// The labelled judging protocols the simulated judges answer. A judge
// prompt's system text opens with the line "Conclave judge · <protocol> ·
// v<N>" (docs/judging.md).
const (
	ProtocolPairwise  = "pairwise"
	ProtocolPlurality = "plurality"
)

// judgeLineRe matches the first line of a judge prompt of a version this
// simulator answers.
var judgeLineRe = regexp.MustCompile(`^Conclave judge · (pairwise|plurality) · v1[ \t\r]*$`)

// judgeProtocol names the labelled judging protocol whose prompt text is,
// from its first line; "" when it is none.
func judgeProtocol(text string) string {
	line, _, _ := strings.Cut(text, "\n")
	if m := judgeLineRe.FindStringSubmatch(line); m != nil {
		return m[1]
	}
	return ""
}

// JudgeConfig is how a simulated judge of the pairwise and plurality
// protocols decides. It sees each answer's quality (AnswerRecord.Quality;
// 0 for an answer the simulator did not write), plus a bias for the first
// position and one for answers of its own engine family, plus its own
// noise: answer i's perceived worth is
//
//	U_i = q_i + β_pos·[i is first] + β_self·[i's family is the judge's] + w_ref·[i is right] + Noise·G_i
//
// where "i is right" counts only when the prompt shows a reference answer
// to a verifiable item of the question bank, and w_ref is ReferenceWeight.
// with G_i independent standard Gumbel draws. A plurality judge votes for
// the highest U_i, so P(i) is the softmax of (q_i + biases)/Noise — the
// Bradley–Terry–Luce model. A pairwise judge compares D = U_1 − U_2, whose
// noise is logistic: "1" when D > TieBand, "2" when D < −TieBand, "tie"
// otherwise. The biases are given in win-rate points: β_pos = Noise ·
// logit(0.5 + PositionBias), so that between two equal answers, with no
// tie band, the first wins with probability 0.5 + PositionBias; likewise
// SelfPreference for an answer of the judge's family against one of
// another.
//
// Every field's zero value is its default.
type JudgeConfig struct {
	// Noise is the scale of the judge's error: larger is closer to a coin
	// toss. Defaults to 1.
	Noise float64
	// PositionBias is how much more often the first of two equal answers
	// wins, −0.5 to 0.5 exclusive. Defaults to 0.
	PositionBias float64
	// SelfPreference is how much more often an answer of the judge's own
	// family wins against an equal answer of another family, −0.5 to 0.5
	// exclusive. Defaults to 0.
	SelfPreference float64
	// TieBand is the half-width of the pairwise verdict "tie", on the
	// quality scale: a judge calls a tie when the perceived difference is
	// within it. Plurality votes have no tie. Defaults to 0: no ties.
	TieBand float64
	// MalformedRate is the probability, per call, that the judge's reply is
	// unreadable (prose, a code fence, cut-off or mislabelled JSON), so that
	// a host's retry rule is exercised. A retry of the same prompt draws
	// again and, when readable, gives the same verdict. Defaults to 0.
	MalformedRate float64
	// ReferenceWeight is what a right final answer adds to an answer's
	// perceived worth, on the quality scale, when the prompt holds a
	// reference answer and its question is a verifiable item of the
	// question bank: the judge checks each answer against the reference
	// (the item's checker, bank.Item.Check). At the default, 3, a right
	// answer beats an otherwise equal wrong one with probability
	// σ(3/Noise) ≈ 0.95. Negative means none: the judge ignores the
	// reference. Defaults to 3.
	ReferenceWeight float64
}

// defaultReferenceWeight is JudgeConfig.ReferenceWeight's default.
const defaultReferenceWeight = 3

func (j JudgeConfig) withDefaults() JudgeConfig {
	if j.Noise == 0 {
		j.Noise = 1
	}
	switch {
	case j.ReferenceWeight == 0:
		j.ReferenceWeight = defaultReferenceWeight
	case j.ReferenceWeight < 0:
		j.ReferenceWeight = 0
	}
	return j
}

func (j JudgeConfig) validate() error {
	switch {
	case !(j.Noise >= 0) || math.IsInf(j.Noise, 0):
		return fieldError("Noise", "want a positive number")
	case !(j.PositionBias > -0.5 && j.PositionBias < 0.5):
		return fieldError("PositionBias", "want more than -0.5 and less than 0.5")
	case !(j.SelfPreference > -0.5 && j.SelfPreference < 0.5):
		return fieldError("SelfPreference", "want more than -0.5 and less than 0.5")
	case !(j.TieBand >= 0) || math.IsInf(j.TieBand, 0):
		return fieldError("TieBand", "want 0 or more")
	case !(j.MalformedRate >= 0 && j.MalformedRate <= 1):
		return fieldError("MalformedRate", "want 0 to 1")
	case !finite(j.ReferenceWeight):
		return fieldError("ReferenceWeight", "must be finite")
	}
	return nil
}

// shifts are the biases on the quality scale.
func (j JudgeConfig) shifts() (position, self float64) {
	return j.Noise * logit(0.5+j.PositionBias), j.Noise * logit(0.5+j.SelfPreference)
}

// Pairwise is the probability that a judge so configured gives each
// verdict on two answers of qualities q1 (shown first) and q2, where own1
// and own2 say whether each is of the judge's family. It is the truth the
// simulated judges draw from.
func (j JudgeConfig) Pairwise(q1, q2 float64, own1, own2 bool) (first, tie, second float64) {
	j = j.withDefaults()
	pos, self := j.shifts()
	d := q1 - q2 + pos
	if own1 {
		d += self
	}
	if own2 {
		d -= self
	}
	first = sigmoid((d - j.TieBand) / j.Noise)
	second = sigmoid((-d - j.TieBand) / j.Noise)
	return first, 1 - first - second, second
}

// Plurality is the probability that a judge so configured votes for each
// of the answers of qualities qs, in the order shown, where own says which
// are of the judge's family.
func (j JudgeConfig) Plurality(qs []float64, own []bool) []float64 {
	j = j.withDefaults()
	u := j.worths(qs, own)
	top := math.Inf(-1)
	for _, v := range u {
		top = max(top, v)
	}
	p := make([]float64, len(u))
	sum := 0.0
	for i, v := range u {
		p[i] = math.Exp((v - top) / j.Noise)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}

// worths are the answers' qualities with the biases added.
func (j JudgeConfig) worths(qs []float64, own []bool) []float64 {
	pos, self := j.shifts()
	u := make([]float64, len(qs))
	for i, q := range qs {
		u[i] = q
		if i == 0 {
			u[i] += pos
		}
		if i < len(own) && own[i] {
			u[i] += self
		}
	}
	return u
}

// decide draws the judge's choice among the answers: the index of the
// answer it prefers, or -1 for a pairwise tie.
func (j JudgeConfig) decide(protocol string, qs []float64, own []bool, r *rand.Rand) int {
	u := j.worths(qs, own)
	for i := range u {
		u[i] += j.Noise * gumbel(r)
	}
	if protocol == ProtocolPairwise {
		switch d := u[0] - u[1]; {
		case d > j.TieBand:
			return 0
		case d < -j.TieBand:
			return 1
		}
		return -1
	}
	best := 0
	for i := range u {
		if u[i] > u[best] {
			best = i
		}
	}
	return best
}

// judgeReply answers a judge prompt of protocol: it finds the labelled
// answers in the prompt, looks up their qualities and families, decides,
// and writes the protocol's JSON — or, at the judge's MalformedRate, a
// reply the protocol cannot read. The choice is drawn from the seed, the
// judge's model id and the prompt, so that a retry gets the same verdict;
// whether the reply is malformed is drawn per attempt.
func (s *Server) judgeReply(c *call, protocol string, prof EngineProfile) string {
	answers := labelledAnswers(c.lastUser())
	if n := len(answers); n < 2 || protocol == ProtocolPairwise && n != 2 {
		return "I could not find the answers to compare in this prompt."
	}
	j := s.cfg.Judging
	if prof.Judge != nil {
		j = *prof.Judge
	}
	j = j.withDefaults()
	it, checked := referencedItem(c.lastUser())
	qs := make([]float64, len(answers))
	own := make([]bool, len(answers))
	for i, a := range answers {
		if rec, ok := s.memo.get(a); ok {
			qs[i] = rec.Quality
			own[i] = rec.Family != "" && rec.Family == prof.Family
		}
		if checked && it.Check(a) {
			qs[i] += j.ReferenceWeight
		}
	}
	key := digest(c.text())
	pick := j.decide(protocol, qs, own, seeded(s.cfg.Seed, "verdict", c.model, key))

	var reply, prose string
	switch {
	case protocol == ProtocolPlurality:
		label := strconv.Itoa(pick + 1)
		reason := fmt.Sprintf("Answer %s is the most correct and complete of the %d answers.", label, len(answers))
		reply, prose = verdictJSON("best", label, reason), reason
	case pick < 0:
		reason := "Neither answer is more correct or complete than the other."
		reply, prose = verdictJSON("verdict", "tie", reason), reason
	default:
		label := strconv.Itoa(pick + 1)
		reason := fmt.Sprintf("Answer %s is more correct and complete than Answer %d.", label, 2-pick)
		reply, prose = verdictJSON("verdict", label, reason), reason
	}

	m := seeded(s.cfg.Seed, "malformed", c.model, key, strconv.Itoa(c.attempt))
	if m.Float64() >= j.MalformedRate {
		return reply
	}
	switch m.IntN(4) {
	case 0: // prose, as a judge that forgot the format writes
		return prose
	case 1: // a code fence around the object
		return "```json\n" + reply + "\n```"
	case 2: // cut off in the middle
		return reply[:len(reply)/2]
	}
	// The answer named instead of labelled.
	if protocol == ProtocolPlurality {
		return verdictJSON("best", "Answer "+strconv.Itoa(pick+1), prose)
	}
	return verdictJSON("verdict", "Answer "+strconv.Itoa(max(pick, 0)+1), prose)
}

// referencedItem is the verifiable bank item a labelled judge prompt asks
// about when the prompt shows a reference answer (docs/judging.md: the
// question after the line "Question:", then the line "[Reference
// answer]"): the item whose checker a judge with the reference in front of
// it marks the answers by.
func referencedItem(user string) (bank.Item, bool) {
	rest, ok := strings.CutPrefix(user, "Question:\n")
	if !ok {
		return bank.Item{}, false
	}
	q, _, ok := strings.Cut(rest, "\n\n[Reference answer]\n")
	if !ok {
		return bank.Item{}, false
	}
	it, ok := bankItem(q)
	return it, ok && it.Kind == bank.Verifiable
}

// verdictJSON is {"<key>":"<value>","reason":"<reason>"}, in that order.
func verdictJSON(key, value, reason string) string {
	v, _ := json.Marshal(value)
	r, _ := json.Marshal(reason)
	return `{"` + key + `":` + string(v) + `,"reason":` + string(r) + `}`
}

// labelledAnswers reads the answers of a labelled judge prompt: each block
// that starts with a line "[Answer <k>]", k counting from 1, and runs to
// the next such line or the line "[End of answers]". Lines inside the
// texts that would read as markers are quoted by the protocols, so these
// lines are the prompt's own.
func labelledAnswers(user string) []string {
	var out []string
	var cur *strings.Builder
	next := "[Answer 1]"
	for line := range strings.Lines(user) {
		trimmed := strings.TrimRight(line, "\r\n")
		switch {
		case trimmed == next:
			if cur != nil {
				out = append(out, strings.TrimSpace(cur.String()))
			}
			cur = &strings.Builder{}
			next = "[Answer " + strconv.Itoa(len(out)+2) + "]"
		case trimmed == "[End of answers]":
			if cur != nil {
				out = append(out, strings.TrimSpace(cur.String()))
			}
			return out
		case cur != nil:
			cur.WriteString(line)
		}
	}
	return nil // no end marker: not a prompt of the format
}

func logit(p float64) float64   { return math.Log(p / (1 - p)) }
func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// gumbel draws a standard Gumbel variate.
func gumbel(r *rand.Rand) float64 {
	u := r.Float64()
	for u == 0 {
		u = r.Float64()
	}
	return -math.Log(-math.Log(u))
}
