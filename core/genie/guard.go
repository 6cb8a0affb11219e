package genie

import (
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// The invented-figure guard. The assistant may explain a mode's figures but
// never invent one: every numeral in its answer — an integer, a decimal, a
// percentage, an amount of money — must be one its facts block also holds.
// Dates and times are exempt, and so are digits inside a name (a gate's g3,
// a version's v2, an engine's llama4): they are not figures. A numeral
// matches a fact when the fact, rounded to the decimals the numeral shows,
// is the numeral's value — or, for a percentage, when the fact as a
// fraction is: "58%" and "0.58" both read W = 0.5812.

// Numeral is one figure an answer states.
type Numeral struct {
	// Text is the numeral as written: "$1,204.50", "58%", "0.58".
	Text string
	// Value is its value as written (58 for "58%"), Decimals how many
	// digits it shows after the point, Percent whether it is one.
	Value    float64
	Decimals int
	Percent  bool
}

// Unsupported is a numeral no fact holds, with the sentence that states it.
type Unsupported struct {
	Numeral  Numeral
	Sentence string
}

var (
	// numeralRe finds figures: an optional currency sign, digits with
	// optional thousands separators and decimals, an optional percent.
	numeralRe = regexp.MustCompile(`[$€£]?\d{1,3}(?:,\d{3})+(?:\.\d+)?%?|[$€£]?\d+(?:\.\d+)?%?|[$€£]?\.\d+%?`)
	// dateRes are the dates and times the guard does not count: ISO dates
	// and times, "28 Nov 2026", "Nov 2026", "28 November".
	dateRes = []*regexp.Regexp{
		regexp.MustCompile(`\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})?)?`),
		regexp.MustCompile(`\b\d{1,2}:\d{2}(?::\d{2})?\b(?:\s*UTC)?`),
		regexp.MustCompile(`(?i)\b\d{1,2}\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?(?:\s+\d{4})?\b`),
		regexp.MustCompile(`(?i)\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}(?:,?\s+\d{4})?\b`),
		regexp.MustCompile(`(?i)\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{4}\b`),
	}
)

// Numerals lists the figures text states, in order: dates, times and
// digits inside a name left out.
func Numerals(text string) []Numeral {
	masked := []byte(text)
	for _, re := range dateRes {
		for _, loc := range re.FindAllIndex(masked, -1) {
			for i := loc[0]; i < loc[1]; i++ {
				masked[i] = ' '
			}
		}
	}
	var out []Numeral
	for _, loc := range numeralRe.FindAllIndex(masked, -1) {
		if inName(masked, loc[0], loc[1]) {
			continue
		}
		raw := string(masked[loc[0]:loc[1]])
		n := Numeral{Text: raw, Percent: strings.HasSuffix(raw, "%")}
		digits := strings.TrimLeft(strings.TrimSuffix(raw, "%"), "$€£")
		digits = strings.ReplaceAll(digits, ",", "")
		if i := strings.IndexByte(digits, '.'); i >= 0 {
			n.Decimals = len(digits) - i - 1
		}
		v, err := strconv.ParseFloat(digits, 64)
		if err != nil {
			continue
		}
		n.Value = v
		out = append(out, n)
	}
	return out
}

// inName reports whether the figure at text[from:to] is part of a name: a
// letter, a digit or an underscore before it, or a letter or an underscore
// after it (g3, v2, llama4, req_7f3a, 3rd).
func inName(text []byte, from, to int) bool {
	letter := func(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
	digit := func(c byte) bool { return '0' <= c && c <= '9' }
	return from > 0 && (letter(text[from-1]) || digit(text[from-1])) || to < len(text) && letter(text[to])
}

// FactValues are every number in facts, walked as JSON: the figures an
// answer may state.
func FactValues(facts any) []float64 {
	b, err := json.Marshal(facts)
	if err != nil {
		return nil
	}
	var v any
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return nil
	}
	var out []float64
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			for _, y := range x {
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		case json.Number:
			if f, err := x.Float64(); err == nil {
				out = append(out, f)
			}
		}
	}
	walk(v)
	return out
}

// supported reports whether a fact is n, rounded as n is written. Signs
// are not compared: a lower bound of −0.37 may be written "−0.37" or "0.37
// below parity's side".
func supported(n Numeral, facts []float64) bool {
	scale := math.Pow(10, float64(n.Decimals))
	same := func(f float64) bool { return math.Round(math.Abs(f)*scale) == math.Round(n.Value*scale) }
	for _, f := range facts {
		if same(f) || n.Percent && same(f*100) {
			return true
		}
	}
	return false
}

// Check lists the numerals of answer that no fact supports, each with its
// sentence.
func Check(answer string, facts []float64) []Unsupported {
	var out []Unsupported
	for _, s := range sentences(answer) {
		for _, n := range Numerals(s) {
			if !supported(n, facts) {
				out = append(out, Unsupported{Numeral: n, Sentence: s})
			}
		}
	}
	return out
}

// Strip removes from answer every sentence that states a numeral no fact
// supports, and says how many it removed.
func Strip(answer string, facts []float64) (string, int) {
	var b strings.Builder
	removed := 0
	for _, s := range sentencesKeeping(answer) {
		bad := false
		for _, n := range Numerals(s) {
			if !supported(n, facts) {
				bad = true
				break
			}
		}
		if bad {
			removed++
			continue
		}
		b.WriteString(s)
	}
	return strings.TrimSpace(b.String()), removed
}

// sentences splits text into its sentences, trimmed.
func sentences(text string) []string {
	var out []string
	for _, s := range sentencesKeeping(text) {
		if t := strings.TrimSpace(s); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// sentencesKeeping splits text after each sentence's end — a full stop,
// question or exclamation mark followed by a space or the end, or a line
// break — keeping every byte, so that the parts joined are text.
func sentencesKeeping(text string) []string {
	var out []string
	start := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		end := c == '\n' || (c == '.' || c == '!' || c == '?') && (i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\n')
		if !end {
			continue
		}
		j := i + 1
		for j < len(text) && text[j] == ' ' {
			j++
		}
		out = append(out, text[start:j])
		start = j
		i = j - 1
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}
