package sim

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// answerMarker opens each answer block in Conclave's judging prompts: a
// line that starts with "[Answer <ID>]".
const answerMarker = "[Answer"

// blockEnders are the words that, opening a paragraph after the last answer
// block, mark where the prompt's own instructions resume.
var blockEnders = map[string]bool{
	"respond": true, "reply": true, "return": true, "output": true, "score": true, "rate": true,
	"judge": true, "now": true, "your": true, "instructions": true, "instruction": true,
	"format": true, "give": true, "compare": true, "evaluate": true, "write": true, "critique": true,
}

// answerBlock is one anonymised answer in a prompt.
type answerBlock struct {
	id   string
	text string
}

// answerBlocks splits text at its answer markers. head is what precedes
// the first one. It scans lines by hand: prompts can be long and this runs
// on every call.
func answerBlocks(text string) (head string, blocks []answerBlock) {
	if !strings.Contains(text, answerMarker) {
		return text, nil
	}
	type marker struct {
		lineStart, bodyStart int
		id                   string
	}
	var ms []marker
	for start := 0; start < len(text); {
		end := strings.IndexByte(text[start:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += start
		}
		line := text[start:end]
		trimmed := strings.TrimLeft(line, " \t")
		if rest, ok := strings.CutPrefix(trimmed, answerMarker); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			if j := strings.IndexByte(rest, ']'); j > 0 {
				if id := strings.TrimSpace(rest[:j]); id != "" {
					body := start + (len(line) - len(rest)) + j + 1
					ms = append(ms, marker{lineStart: start, bodyStart: body, id: id})
				}
			}
		}
		start = end + 1
	}
	if len(ms) == 0 {
		return text, nil
	}
	head = text[:ms[0].lineStart]
	for i, m := range ms {
		end := len(text)
		if i+1 < len(ms) {
			end = ms[i+1].lineStart
		}
		body := text[m.bodyStart:end]
		if i == len(ms)-1 {
			body = cutInstructions(body)
		}
		blocks = append(blocks, answerBlock{id: m.id, text: strings.TrimSpace(body)})
	}
	return head, blocks
}

// cutInstructions ends the last answer block where the prompt's own
// instructions resume: a paragraph opening with an instruction word, or a
// line "---", "[/Answer…" or "[End…".
func cutInstructions(body string) string {
	prevBlank := false
	for start := 0; start < len(body); {
		end := strings.IndexByte(body[start:], '\n')
		if end < 0 {
			end = len(body)
		} else {
			end += start
		}
		line := strings.ToLower(strings.TrimSpace(body[start:end]))
		switch {
		case strings.HasPrefix(line, "---") || strings.HasPrefix(line, "[/answer") || strings.HasPrefix(line, "[end"):
			return body[:start]
		case prevBlank && line != "" && blockEnders[firstWord(line)]:
			return body[:start]
		}
		prevBlank = line == ""
		start = end + 1
	}
	return body
}

var questionLineRe = regexp.MustCompile(`(?is)(?:^|\n)[#*\s]*(?:original\s+)?question[*\s]*:?[*\s]*\n?(.+?)(?:\n[ \t]*\n|$)`)

// questionIn finds the question in the text before the answer blocks: the
// paragraph after a "Question:" label when there is one.
func questionIn(head string) string {
	if m := questionLineRe.FindStringSubmatch(head); m != nil && strings.TrimSpace(m[1]) != "" {
		return strings.TrimSpace(m[1])
	}
	return strings.TrimSpace(head)
}

var (
	conclusionRe = regexp.MustCompile(`(?i)^[^a-z0-9\n]*conclusion[^a-z0-9\n]*:\s*(.+?)\s*$`)
	numberRe     = regexp.MustCompile(`-?\d+(?:\.\d+)?`)
	firstWordRe  = regexp.MustCompile(`^[^a-z0-9]*([a-z]+)`)
	undecidedRe  = regexp.MustCompile(`^[^a-z0-9]*(it\s+)?(cannot|can't|can not)\s+be\s+determined|^[^a-z0-9]*(undetermined|not necessarily)`)
)

// conclusionLine finds the first "Conclusion: …" line of text: the line's
// bounds and the conclusion it states.
func conclusionLine(text string) (start, end int, value string, ok bool) {
	low := strings.ToLower(text)
	for off := 0; ; {
		i := strings.Index(low[off:], "conclusion")
		if i < 0 {
			return 0, 0, "", false
		}
		i += off
		start = strings.LastIndexByte(text[:i], '\n') + 1
		end = strings.IndexByte(text[i:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += i
		}
		if m := conclusionRe.FindStringSubmatch(text[start:end]); m != nil {
			return start, end, m[1], true
		}
		off = i + len("conclusion")
	}
}

// conclusionKey extracts what an answer concludes, in a canonical form, so
// that answers can be compared: the text of a "Conclusion:" line; "yes",
// "no" or "undetermined" when the answer opens with one; "undefined"; or
// the last number it states. "" when it finds none.
func conclusionKey(text string) string {
	if _, _, v, ok := conclusionLine(text); ok {
		return canonical(v)
	}
	low := strings.ToLower(strings.TrimSpace(text))
	if undecidedRe.MatchString(low) {
		return "undetermined"
	}
	if m := firstWordRe.FindStringSubmatch(low); m != nil {
		switch m[1] {
		case "yes", "no", "undefined":
			return m[1]
		}
	}
	if nums := numberRe.FindAllString(low, -1); len(nums) > 0 {
		if v, err := strconv.ParseFloat(nums[len(nums)-1], 64); err == nil {
			return formatNumber(v)
		}
	}
	return ""
}

func canonical(s string) string {
	return strings.Join(strings.Fields(strings.Trim(strings.ToLower(s), " .!*_`\"'")), " ")
}

// majorityKey is the conclusion most answers share ("" when no two do).
func majorityKey(blocks []answerBlock) string {
	counts := map[string]int{}
	best, bestN := "", 1
	for _, b := range blocks {
		k := conclusionKey(b.text)
		if k == "" {
			continue
		}
		counts[k]++
		if counts[k] > bestN {
			best, bestN = k, counts[k]
		}
	}
	return best
}

// verdict is the judge JSON Conclave's judging protocol asks for.
type verdict struct {
	Scores           map[string]float64 `json:"scores"`
	Best             string             `json:"best"`
	Divergence       float64            `json:"divergence"`
	Converged        bool               `json:"converged"`
	FactualConflict  bool               `json:"factual_conflict"`
	ContestedPassage *contestedPassage  `json:"contested_passage"`
}

type contestedPassage struct {
	Answer string `json:"answer"`
	Quote  string `json:"quote"`
	Why    string `json:"why"`
}

// judgeJSON reads the answers as a judge would. When the question can be
// solved, answers that reach the right result score high and the others
// low; otherwise answers that share the majority's conclusion score
// higher. Answers converge when they all reach the same conclusion (or,
// with no extractable conclusion, say much the same thing).
func judgeJSON(question string, blocks []answerBlock, seed int64, judge string) string {
	b, _ := json.Marshal(judgeAnswers(question, blocks, seed, judge))
	return string(b)
}

func judgeAnswers(question string, blocks []answerBlock, seed int64, judge string) verdict {
	n := len(blocks)
	keys := make([]string, n)
	words := make([][]uint64, n)
	for i, b := range blocks {
		keys[i], words[i] = conclusionKey(b.text), wordSet(b.text)
	}
	sol, solvable := solve(question)
	if solvable && !contains(keys, sol.key) {
		solvable = false // the "question" we found is not what they answered
	}
	// Answers without a conclusion are grouped by wording.
	for i := range keys {
		if keys[i] != "" {
			continue
		}
		keys[i] = "~" + strconv.Itoa(i)
		for j := range i {
			if strings.HasPrefix(keys[j], "~") && jaccard(words[i], words[j]) >= 0.35 {
				keys[i] = keys[j]
				break
			}
		}
	}
	counts := map[string]int{}
	for _, k := range keys {
		counts[k]++
	}
	majority := keys[0]
	for _, k := range keys {
		if counts[k] > counts[majority] {
			majority = k
		}
	}
	if solvable {
		majority = sol.key
	}

	v := verdict{Scores: map[string]float64{}, Converged: len(counts) == 1}
	bestScore := -1.0
	for i, b := range blocks {
		q := quality(b.text, seed, judge)
		var score float64
		switch {
		case solvable && keys[i] == sol.key:
			score = 0.8 + 0.18*q
		case solvable:
			score = 0.05 + 0.25*q
		case v.Converged:
			score = 0.6 + 0.35*q
		case keys[i] == majority:
			score = 0.55 + 0.35*q
		default:
			score = 0.3 + 0.35*q
		}
		score = round2(score)
		v.Scores[b.id] = score
		if score > bestScore {
			v.Best, bestScore = b.id, score
		}
	}

	if n > 1 {
		agree := float64(counts[majority]) / float64(n)
		d := (1 - agree) * float64(n) / float64(n-1)
		sim, pairs := 0.0, 0
		for i := range blocks {
			for j := range i {
				sim += jaccard(words[i], words[j])
				pairs++
			}
		}
		v.Divergence = round2(math.Min(1, math.Max(0, 0.8*d+0.2*(1-sim/float64(pairs)))))
	}
	if v.Converged {
		return v
	}
	v.FactualConflict = solvable || numericConflict(keys)
	// The contested passage: the weakest answer that breaks from the majority.
	pick := -1
	for i, b := range blocks {
		if keys[i] != majority && (pick < 0 || v.Scores[b.id] < v.Scores[blocks[pick].id]) {
			pick = i
		}
	}
	if pick >= 0 {
		theirs, ours := describeKey(keys[pick]), describeKey(majority)
		v.ContestedPassage = &contestedPassage{
			Answer: blocks[pick].id,
			Quote:  passage(blocks[pick].text),
			Why:    fmt.Sprintf("It concludes %s where %d of %d answers conclude %s.", theirs, counts[majority], n, ours),
		}
		if solvable {
			v.ContestedPassage.Why = fmt.Sprintf("It concludes %s, but the correct result is %s.", theirs, sol.key)
		}
	}
	return v
}

func describeKey(k string) string {
	if strings.HasPrefix(k, "~") {
		return "something different"
	}
	return strconv.Quote(k)
}

// numericConflict reports whether at least two answers state different
// numbers, a factual disagreement rather than one of opinion.
func numericConflict(keys []string) bool {
	seen := ""
	for _, k := range keys {
		if _, err := strconv.ParseFloat(k, 64); err != nil {
			continue
		}
		if seen != "" && k != seen {
			return true
		}
		seen = k
	}
	return false
}

// passage quotes an answer verbatim: its conclusion line, or else its
// first sentence, at most 200 bytes.
func passage(text string) string {
	if start, end, _, ok := conclusionLine(text); ok {
		return cutRunes(strings.TrimSpace(text[start:end]), 200)
	}
	text = strings.TrimSpace(text)
	if i := strings.IndexAny(text, ".!?\n"); i >= 0 {
		text = text[:i+1]
	}
	return cutRunes(strings.TrimSpace(text), 200)
}

func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(cutTokens(s, n/4), "")
}

// quality is a judge's private impression of an answer, 0 to 1: answers of
// a reasonable length do better, and each judge adds its own jitter.
func quality(text string, seed int64, judge string) float64 {
	words := len(strings.Fields(text))
	fit := 1.0
	switch {
	case words < 3:
		fit = 0.5
	case words > 600:
		fit = 0.7
	}
	return 0.5*fit + 0.5*seeded(seed, "judge", judge, digest(text)).Float64()
}

// jaccard is the Jaccard index of two word sets.
func jaccard(a, b []uint64) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			inter++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// wordSet is the set of a text's lower-cased words (runs of letters,
// digits and non-ASCII bytes), as sorted FNV-1a hashes.
func wordSet(s string) []uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	var out []uint64
	h, in := uint64(offset), false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c >= 0x80 {
			h = (h ^ uint64(c)) * prime
			in = true
			continue
		}
		if in {
			out = append(out, h)
			h, in = offset, false
		}
	}
	if in {
		out = append(out, h)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }
