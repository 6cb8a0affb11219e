// Package classify judges how hard a question is: a difficulty score from 0
// to 1, the depth band that selects a mode's surcharge, the kind of task, the
// risk of a hallucinated answer, and whether a panel is likely to help.
//
// Heuristic is the deterministic word-count and keyword classifier. It is the
// fallback that takes over whenever a configured classifier engine fails, and
// the classifier of a deployment that configures none; an engine-backed
// classifier reports on the same scale.
package classify

import (
	"context"
	"math"
	"regexp"
	"sort"
	"strings"
	"unicode"

	"github.com/conclavehq/conclave/core"
)

// Result is one classification.
type Result struct {
	Score             float64 // 0 (trivial) to 1 (hardest)
	Depth             core.Depth
	TaskType          string
	HallucinationRisk string // low, medium, high
	Value             Value
	// By names what classified: "heuristic", or an engine id.
	By string
}

// Value is the verdict on whether deliberation is worth it for the question.
type Value struct {
	Verdict  string `json:"verdict"` // likely_helps, likely_hurts, unknown
	Reason   string `json:"reason"`
	Basis    string `json:"basis"`
	Evidence string `json:"evidence"`
}

// Verdicts.
const (
	LikelyHelps = "likely_helps"
	LikelyHurts = "likely_hurts"
	Unknown     = "unknown"
)

// Task types.
const (
	TaskArithmetic   = "arithmetic"
	TaskLookup       = "lookup"
	TaskFormatting   = "formatting"
	TaskVerbatim     = "verbatim"
	TaskCode         = "code"
	TaskCreative     = "creative"
	TaskAnalysis     = "analysis"
	TaskJudgement    = "judgement"
	TaskOpenQuestion = "open_question"
)

// Depth bands: a score under LightBelow is light, under MediumBelow medium,
// otherwise deep.
const (
	LightBelow  = 0.35
	MediumBelow = 0.65
)

// DepthFor maps a score to its band.
func DepthFor(score float64) core.Depth {
	switch {
	case score < LightBelow:
		return core.DepthLight
	case score < MediumBelow:
		return core.DepthMedium
	}
	return core.DepthDeep
}

// Heuristic is the deterministic classifier. The zero value is ready to use
// and safe for concurrent use.
type Heuristic struct{}

// signal is a phrase that moves the score and may mark the task type.
type signal struct {
	phrase string
	weight float64
	task   string
}

// signals are matched against the lower-cased question text as whole words
// or phrases. Positive weights mark questions where several informed
// opinions differ; negative ones mark questions with one checkable answer.
var signals = []signal{
	{"should i", 0.14, TaskJudgement}, {"should we", 0.14, TaskJudgement}, {"recommend", 0.12, TaskJudgement},
	{"trade-off", 0.14, TaskJudgement}, {"tradeoff", 0.14, TaskJudgement}, {"pros and cons", 0.14, TaskJudgement},
	{"decide", 0.1, TaskJudgement}, {"worth it", 0.1, TaskJudgement}, {"strategy", 0.1, TaskJudgement},
	{"ethical", 0.12, TaskJudgement}, {"risk", 0.08, TaskJudgement}, {"best way", 0.08, TaskJudgement},
	{"compare", 0.1, TaskAnalysis}, {"evaluate", 0.1, TaskAnalysis}, {"analyse", 0.1, TaskAnalysis},
	{"analyze", 0.1, TaskAnalysis}, {"why", 0.06, TaskAnalysis}, {"explain", 0.05, TaskAnalysis},
	{"prove", 0.12, TaskAnalysis}, {"design", 0.08, TaskAnalysis}, {"architecture", 0.1, TaskAnalysis},
	{"diagnos", 0.12, TaskAnalysis}, {"legal", 0.1, TaskJudgement}, {"invest", 0.1, TaskJudgement},
	{"what is the capital", -0.2, TaskLookup}, {"what is", -0.06, TaskLookup}, {"who is", -0.08, TaskLookup},
	{"when did", -0.08, TaskLookup}, {"define", -0.1, TaskLookup}, {"definition of", -0.1, TaskLookup},
	{"convert", -0.14, TaskFormatting}, {"format", -0.1, TaskFormatting}, {"translate", -0.1, TaskFormatting},
	{"spell", -0.1, TaskFormatting}, {"reformat", -0.14, TaskFormatting},
	{"verbatim", -0.2, TaskVerbatim}, {"word for word", -0.2, TaskVerbatim}, {"repeat after", -0.2, TaskVerbatim},
	{"write a poem", -0.02, TaskCreative}, {"write a story", -0.02, TaskCreative},
}

var (
	arithmeticRe = regexp.MustCompile(`^[\s\d.,+\-*/^()%=x×÷?]*\d\s*[+\-*/^x×÷%]\s*\d[\s\d.,+\-*/^()%=x×÷?]*$`)
	whatIsMathRe = regexp.MustCompile(`^(what is|what's|calculate|compute)\s+[\d\s.,+\-*/^()%x×÷]+\??$`)
)

// codeWords and factRiskWords are the words that mark a question as code
// or as at high risk of a hallucinated answer, each matched as a whole
// word (hasAnyWord). Searching for them costs a small fraction of what the
// equivalent regular expressions did, a cost that grows with the question:
// with the word count's, about 2 ms of every call on a 2,000-word brief.
// TestWordSearchesKeepTheRegexpsAnswers checks both against those
// expressions.
var (
	codeWords     = []string{"func", "def", "class", "return", "SELECT"}
	factRiskWords = []string{"cite", "citation", "source", "sources", "statistic", "statistics", "exact", "percent",
		"figure", "figures", "in what year", "what year", "how many", "date of", "population"}
)

// looksLikeCode reports whether question holds a code fence, one of
// codeWords, or ends in a semicolon (trailing white space aside).
func looksLikeCode(question string) bool {
	return strings.Contains(question, "```") || hasAnyWord(question, codeWords) ||
		strings.HasSuffix(strings.TrimRight(question, "\t\n\f\r "), ";")
}

// hasAnyWord reports whether one of words occurs in s as a whole word: with
// no ASCII letter, digit or underscore just before or after it (a regular
// expression's \b).
func hasAnyWord(s string, words []string) bool {
	for _, w := range words {
		if occurs(s, w, func(at, end int) bool {
			return (at == 0 || !isASCIIWordByte(s[at-1])) && (end == len(s) || !isASCIIWordByte(s[end]))
		}) {
			return true
		}
	}
	return false
}

func isASCIIWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// countWords counts the words of s: its longest runs of letters, digits,
// apostrophes and hyphens (the matches of `[\p{L}\p{N}'-]+`), without
// building them.
func countWords(s string) int {
	n, in := 0, false
	for _, r := range s {
		w := r == '\'' || r == '-' || unicode.IsLetter(r) || unicode.IsNumber(r)
		if w && !in {
			n++
		}
		in = w
	}
	return n
}

// Classify implements the classification of the question in messages: the
// last user message, with the rest of the conversation counted for length.
func (Heuristic) Classify(_ context.Context, messages []core.Message) (*Result, error) {
	var question string
	total := 0
	for _, m := range messages {
		total += countWords(m.Content)
		if m.Role == core.RoleUser {
			question = m.Content
		}
	}
	q := strings.ToLower(strings.TrimSpace(question))
	words := countWords(q)

	// Length: log-scaled so that a long brief counts, but never alone makes a
	// question deep. 400 words of context reach the full 0.35.
	lengthPart := 0.35 * math.Min(1, math.Log1p(float64(total))/math.Log1p(400))
	score := 0.12 + lengthPart

	taskWeights := map[string]float64{}
	var hits []string
	for _, s := range signals {
		if containsPhrase(q, s.phrase) {
			score += s.weight
			taskWeights[s.task] += math.Abs(s.weight)
			hits = append(hits, s.phrase)
		}
	}
	task := TaskOpenQuestion
	switch {
	case arithmeticRe.MatchString(q) || whatIsMathRe.MatchString(q):
		task = TaskArithmetic
		score = math.Min(score, 0.1)
		hits = append(hits, "arithmetic expression")
	case looksLikeCode(question):
		task = TaskCode
		score += 0.05
		hits = append(hits, "code")
	case len(taskWeights) > 0:
		task = heaviest(taskWeights)
	}
	if words > 0 && words <= 6 && task != TaskArithmetic {
		score -= 0.05 // a very short question rarely needs a panel
	}
	score = math.Round(math.Max(0, math.Min(1, score))*1000) / 1000

	risk := "low"
	switch {
	case hasAnyWord(q, factRiskWords):
		risk = "high"
	case task == TaskLookup || task == TaskAnalysis || task == TaskJudgement:
		risk = "medium"
	}
	depth := DepthFor(score)
	return &Result{
		Score: score, Depth: depth, TaskType: task, HallucinationRisk: risk, By: "heuristic",
		Value: valueOf(task, depth, hits),
	}, nil
}

// valueOf says whether a panel is likely to help: it hurts (costs more, adds
// nothing) on tasks with one checkable answer, helps on judgement and
// analysis that are not light, and is unknown otherwise.
func valueOf(task string, depth core.Depth, hits []string) Value {
	evidence := "task_type=" + task + "; depth=" + string(depth)
	if len(hits) > 0 {
		evidence += "; signals: " + strings.Join(hits, ", ")
	}
	v := Value{Basis: "heuristic", Evidence: evidence}
	switch {
	case task == TaskArithmetic || task == TaskLookup || task == TaskFormatting || task == TaskVerbatim:
		v.Verdict = LikelyHurts
		v.Reason = "A single model answers " + task + " tasks as well as a panel, faster and cheaper."
	case (task == TaskJudgement || task == TaskAnalysis) && depth != core.DepthLight:
		v.Verdict = LikelyHelps
		v.Reason = "Informed opinions differ on " + task + " questions like this one; critique between seats tends to catch weak arguments."
	default:
		v.Verdict = Unknown
		v.Reason = "Nothing in the question shows whether a panel would do better than one model."
	}
	return v
}

func heaviest(w map[string]float64) string {
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	sort.Strings(keys) // ties break alphabetically, so the result is stable
	best := keys[0]
	for _, k := range keys[1:] {
		if w[k] > w[best] {
			best = k
		}
	}
	return best
}

// containsPhrase reports whether phrase occurs in s starting at a word
// boundary ("risk" matches "risky" but "why" does not match "anyhow").
func containsPhrase(s, phrase string) bool {
	return occurs(s, phrase, func(at, _ int) bool { return at == 0 || !isWordByte(s[at-1]) })
}

// occurs reports whether sub occurs in s at some s[at:end] that bounded
// accepts.
func occurs(s, sub string, bounded func(at, end int) bool) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], sub)
		if j < 0 {
			return false
		}
		at := i + j
		if bounded(at, at+len(sub)) {
			return true
		}
		i = at + 1
	}
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 0x80
}
