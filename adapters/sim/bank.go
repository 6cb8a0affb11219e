package sim

import (
	"slices"
	"strings"
	"sync"

	"github.com/conclavehq/conclave/core/bench/bank"
)

// The simulator knows Conclave's question bank (core/bench/bank, the
// version this build serves) as a model knows the problems it can solve:
// a question whose text is a bank item's takes its bucket from the item,
// and a verifiable item is answered with its reference answer or, when the
// answer's quality loses the draw against the bucket's difficulty, with
// one of the item's plausible wrong answers (QualityConfig.Difficulty).

// bankItems are the bank's items by their question text with its runs of
// white space made single spaces (bankKey), built on first use. The key
// is exact otherwise: "Convert 5 °C" and "Convert -5 °C" are two items,
// which the normalised words that key the memory of answers do not tell
// apart.
var bankItems = sync.OnceValue(func() map[string]bank.Item {
	out := map[string]bank.Item{}
	for _, b := range bank.Buckets {
		pool, err := bank.Pool(bank.Version, b)
		if err != nil { // the build's own version always builds; its tests hold every item
			continue
		}
		for _, it := range pool {
			out[bankKey(it.Question)] = it
		}
	}
	return out
})

func bankKey(question string) string { return strings.Join(strings.Fields(question), " ") }

// questionKey is the key a question's quality is drawn by: the digest of
// its normalised words.
func questionKey(question string) string { return digest(normalizeText(question)) }

// bankItem is the bank item whose question is question.
func bankItem(question string) (bank.Item, bool) {
	it, ok := bankItems()[bankKey(question)]
	return it, ok
}

// Difficulty is how hard the bank's verifiable questions of each bucket
// are, on the quality scale: an answer of quality q to a verifiable item of
// a bucket of difficulty d states the right final answer with probability
// σ(q − d), and one of the item's plausible wrong answers otherwise.
type Difficulty struct {
	Light, Medium, Hard float64
}

// DefaultDifficulty is the difficulty when QualityConfig.Difficulty is nil,
// set so that the default simulated baseline — sonnet, the best seat of
// the built-in standard panel — passes the bank's verifiable items at the
// middle of the certification design's bands (bank.BandOf): about 90% of
// light items, 60% of medium and 27.5% of hard, with the default answer
// noise. TestDefaultBaselinePassRatesFallInTheBands holds it there.
var DefaultDifficulty = Difficulty{Light: -2.26, Medium: -0.29, Hard: 1.06}

// For is the difficulty of a bucket; a bucket it does not know is medium.
func (d Difficulty) For(bucket string) float64 { return byBucket(bucket, d.Light, d.Medium, d.Hard) }

func (d Difficulty) validate() error {
	for _, v := range []float64{d.Light, d.Medium, d.Hard} {
		if !finite(v) {
			return fieldError("Quality.Difficulty", "values must be finite")
		}
	}
	return nil
}

// PCorrect is the probability that an answer of quality q to a verifiable
// bank item of the bucket states the right final answer: σ(q − difficulty).
func (q QualityConfig) PCorrect(quality float64, bucket string) float64 {
	d := DefaultDifficulty
	if q.Difficulty != nil {
		d = *q.Difficulty
	}
	return sigmoid(quality - d.For(bucket))
}

// verifiableLeads open an answer to a verifiable item, by the engine's
// style; each ends where the answer line follows. A synthesis has its own,
// so that the panel's answer is never the same text as a seat's.
var verifiableLeads = map[string]string{
	"terse":      "",
	"structured": "Working:\n1. Read off the givens.\n2. Work each step in order.\n3. Check the result against the question.",
	"thorough":   "I worked through every step and then double-checked the working from the other end.",
	"balanced":   "Working through the question step by step gives one result.",
	"nuanced":    "The question has one exact answer; working through it carefully gives it.",
	"brisk":      "Worked it through.",
	"sectioned":  "## Working\n\nEach step follows from the givens.\n\n## Result",
	"plain":      "Working through the question step by step:",
}

const synthesisLeadText = "Weighing the panel's answers and checking their working, the panel's answer is this."

// verifiableText is the answer to a verifiable item that rec records: the
// problem restated, a short lead in the engine's style and the line the
// question asks for,
// "Answer: …", holding the reference answer when rec is correct and
// otherwise one of the item's wrong answers, drawn from (seed, model,
// question; a synthesis draws its own).
func (s *Server) verifiableText(it bank.Item, rec *AnswerRecord, model, style string) string {
	final := it.Answer
	if !rec.Correct {
		// A revision keeps its answer's draw, and so its wrong answer.
		kind := KindAnswer
		if rec.Kind == KindSynthesis {
			kind = KindSynthesis
		}
		wrong := it.WrongAnswers()
		final = wrong[seeded(s.cfg.Seed, "wrong", model, it.ID, kind).IntN(len(wrong))]
	}
	lead, ok := verifiableLeads[style]
	if !ok {
		lead = verifiableLeads["plain"]
	}
	if rec.Kind == KindSynthesis {
		lead = synthesisLeadText
	}
	// The problem restated keeps the texts of two questions' answers apart
	// ("Answer: 12" answers many), as the memory of answers needs.
	parts := []string{"The problem: " + it.Problem(), lead, "Answer: " + final}
	if lead == "" {
		parts = slices.Delete(parts, 1, 2)
	}
	return strings.Join(parts, "\n\n")
}
