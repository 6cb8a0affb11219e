package bank

import (
	"math/big"
	"regexp"
	"sort"
	"strings"
	"time"
)

// A checker reads a model's free prose the way a careful marker would: the
// final answer is what follows the last answer marker ("Answer:", "final
// answer is", "**Answer**:", \boxed{…}); without a marker it is the last
// candidate in the text. Every question of the bank asks for an "Answer:"
// line, so the fallback only serves answers that ignore the request, and it
// can misread them (a conversion that ends by restating the input).

var markerRE = regexp.MustCompile(`(?i)\banswer\b\s*(?:\*\*|__)?\s*(?:[:：=]|\bis\b|\bwould be\b)|\\boxed\s*\{`)

// answerRegion returns the text after the last answer marker, and whether
// there was one.
func answerRegion(text string) (string, bool) {
	locs := markerRE.FindAllStringIndex(text, -1)
	if len(locs) == 0 {
		return text, false
	}
	return text[locs[len(locs)-1][1]:], true
}

// token is a candidate answer found in a text, at a byte offset.
type token struct {
	pos  int
	word string   // the vocabulary word, canonical spelling
	num  *big.Rat // a number
	date time.Time
}

// final picks the final answer among tokens found by find: the first after
// the last marker, else the last in the text.
func final(text string, find func(string) []token) (token, bool) {
	region, marked := answerRegion(text)
	if marked {
		if ts := find(region); len(ts) > 0 {
			return ts[0], true
		}
	}
	ts := find(text)
	if len(ts) == 0 {
		return token{}, false
	}
	return ts[len(ts)-1], true
}

// Numbers: "1,234.5", "-3", "5/36", "$12.40", "45%".
var numberRE = regexp.MustCompile(`(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\s*/\s*\d+(?:\.\d+)?)?`)

func findNumbers(text string) []token {
	var out []token
	for _, loc := range numberRE.FindAllStringIndex(text, -1) {
		s := strings.ReplaceAll(text[loc[0]:loc[1]], ",", "")
		s = strings.ReplaceAll(s, " ", "")
		var v *big.Rat
		if num, den, ok := strings.Cut(s, "/"); ok {
			n, ok1 := new(big.Rat).SetString(num)
			d, ok2 := new(big.Rat).SetString(den)
			if !ok1 || !ok2 || d.Sign() == 0 {
				continue
			}
			v = n.Quo(n, d)
		} else {
			var ok bool
			if v, ok = new(big.Rat).SetString(s); !ok {
				continue
			}
		}
		if negated(text, loc[0]) {
			v.Neg(v)
		}
		out = append(out, token{pos: loc[0], num: v})
	}
	return out
}

// negated reports whether the number at pos carries a minus sign: a hyphen
// or minus sign right before it that does not join two words or numbers.
func negated(text string, pos int) bool {
	before := text[:pos]
	var sign string
	switch {
	case strings.HasSuffix(before, "-"):
		sign = "-"
	case strings.HasSuffix(before, "−"):
		sign = "−"
	default:
		return false
	}
	before = strings.TrimSuffix(before, sign)
	if before == "" {
		return true
	}
	c := before[len(before)-1]
	return !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == ')')
}

// numberCheck accepts an answer whose final number is within tol of want.
func numberCheck(want, tol *big.Rat) func(string) bool {
	return func(text string) bool {
		t, ok := final(text, findNumbers)
		if !ok {
			return false
		}
		d := new(big.Rat).Sub(t.num, want)
		return d.Abs(d).Cmp(tol) <= 0
	}
}

// wordsRE matches any word of a vocabulary, case-insensitively and on word
// boundaries, longest first.
func wordsRE(vocab []string) *regexp.Regexp {
	ws := append([]string(nil), vocab...)
	sort.Slice(ws, func(i, j int) bool { return len(ws[i]) > len(ws[j]) })
	for i, w := range ws {
		ws[i] = regexp.QuoteMeta(w)
	}
	return regexp.MustCompile(`(?i)\b(?:` + strings.Join(ws, "|") + `)\b`)
}

func wordFinder(vocab []string) func(string) []token {
	re := wordsRE(vocab)
	canon := map[string]string{}
	for _, w := range vocab {
		canon[strings.ToLower(w)] = w
	}
	return func(text string) []token {
		var out []token
		for _, loc := range re.FindAllStringIndex(text, -1) {
			out = append(out, token{pos: loc[0], word: canon[strings.ToLower(text[loc[0]:loc[1]])]})
		}
		return out
	}
}

// choiceCheck accepts an answer whose final word of vocab is want: a named
// person, a weekday, a colour.
func choiceCheck(vocab []string, want string) func(string) bool {
	find := wordFinder(vocab)
	return func(text string) bool {
		t, ok := final(text, find)
		return ok && t.word == want
	}
}

var weekdays = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}

var monthNames = func() map[string]time.Month {
	m := map[string]time.Month{}
	for mo := time.January; mo <= time.December; mo++ {
		m[strings.ToLower(mo.String())] = mo
		m[strings.ToLower(mo.String()[:3])] = mo
	}
	m["sept"] = time.September
	return m
}()

const monthPat = `(January|February|March|April|May|June|July|August|September|October|November|December|` +
	`Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\.?`

var (
	isoDateRE = regexp.MustCompile(`\b(\d{4})-(\d{1,2})-(\d{1,2})\b`)
	mdyDateRE = regexp.MustCompile(`(?i)\b` + monthPat + `\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b`)
	dmyDateRE = regexp.MustCompile(`(?i)\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?` + monthPat + `,?\s+(\d{4})\b`)
)

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

// findDates finds dates written as 2031-03-05, March 5, 2031 or 5 March 2031.
func findDates(text string) []token {
	var out []token
	add := func(pos, y int, mo time.Month, d int) {
		t := time.Date(y, mo, d, 0, 0, 0, 0, time.UTC)
		if t.Day() == d && t.Month() == mo { // refuse 31 April rather than normalise it
			out = append(out, token{pos: pos, date: t})
		}
	}
	for _, m := range isoDateRE.FindAllStringSubmatchIndex(text, -1) {
		add(m[0], atoi(text[m[2]:m[3]]), time.Month(atoi(text[m[4]:m[5]])), atoi(text[m[6]:m[7]]))
	}
	for _, m := range mdyDateRE.FindAllStringSubmatchIndex(text, -1) {
		add(m[0], atoi(text[m[6]:m[7]]), monthNames[strings.ToLower(text[m[2]:m[3]])], atoi(text[m[4]:m[5]]))
	}
	for _, m := range dmyDateRE.FindAllStringSubmatchIndex(text, -1) {
		add(m[0], atoi(text[m[6]:m[7]]), monthNames[strings.ToLower(text[m[4]:m[5]])], atoi(text[m[2]:m[3]]))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pos < out[j].pos })
	return out
}

func dateCheck(want time.Time) func(string) bool {
	return func(text string) bool {
		t, ok := final(text, findDates)
		return ok && t.date.Equal(want)
	}
}

// lastLineWith returns the last line of text in which find sees at least
// min tokens, or "".
func lastLineWith(text string, find func(string) []token, min int) string {
	lines := strings.Split(text, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if len(find(lines[i])) >= min {
			return lines[i]
		}
	}
	return ""
}

// sequenceRegion is where a listed answer (a route, an order) is read: after
// the last marker, else the last line that names every element.
func sequenceRegion(text string, find func(string) []token, n int) string {
	if region, marked := answerRegion(text); marked && len(find(region)) > 0 {
		return region
	}
	if line := lastLineWith(text, find, n); line != "" {
		return line
	}
	return lastLineWith(text, find, 1)
}

// routeCheck accepts an answer whose route — from the first mention of the
// start to the next mention of the destination — is want.
func routeCheck(vocab, want []string) func(string) bool {
	find := wordFinder(vocab)
	return func(text string) bool {
		ts := find(sequenceRegion(text, find, len(want)))
		start := -1
		for i, t := range ts {
			if t.word == want[0] {
				start = i
				break
			}
		}
		if start < 0 {
			return false
		}
		var got []string
		for _, t := range ts[start:] {
			if len(got) > 0 && got[len(got)-1] == t.word {
				continue
			}
			got = append(got, t.word)
			if t.word == want[len(want)-1] {
				break
			}
		}
		return equalStrings(got, want)
	}
}

// orderCheck accepts an answer that lists every element of want in want's
// order (later repeats ignored).
func orderCheck(vocab, want []string) func(string) bool {
	find := wordFinder(vocab)
	return func(text string) bool {
		var got []string
		seen := map[string]bool{}
		for _, t := range find(sequenceRegion(text, find, len(want))) {
			if !seen[t.word] {
				seen[t.word] = true
				got = append(got, t.word)
			}
		}
		return equalStrings(got, want)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Knights and knaves. The answer names the knights; the checker reads which
// role the answer gives each person, clause by clause: "Ada and Cy are
// knights; Bo is a knave", "The knights are Ada and Cy", "Ada: knight, Bo:
// knave", "Answer: Ada, Cy" (names alone are the knights asked for),
// "Neither Ada nor Bo is a knight", "None of them is a knight".

var (
	knightRE = regexp.MustCompile(`(?i)\b(?:knights?|truth[- ]?tellers?|truthful|honest|tells the truth|tell the truth)\b`)
	knaveRE  = regexp.MustCompile(`(?i)\b(?:knaves?|liars?|lying|lies|lie)\b`)
	notRE    = regexp.MustCompile(`(?i)\b(?:not|neither|nor|never)\b|n't\b`)
	noneRE   = regexp.MustCompile(`(?i)\b(?:none|no one|nobody|no knights?|no knaves?)\b`)
	allRE    = regexp.MustCompile(`(?i)\b(?:all|both|everyone|every one|each of them)\b`)
	clauseRE = regexp.MustCompile(`[;.\n]+`)
)

type roleTok struct {
	pos    int
	name   string // a person, or "" for a role word
	knight bool   // for role words
}

// roles reads a text into a role per person; ok is false when the text
// gives someone both roles or names no one.
func roles(text string, names []string) (map[string]bool, bool) {
	find := wordFinder(names)
	got := map[string]bool{}
	conflict := false
	set := func(name string, knight bool) {
		if prev, seen := got[name]; seen && prev != knight {
			conflict = true
		}
		got[name] = knight
	}
	for _, clause := range clauseRE.Split(text, -1) {
		pieces := []string{clause}
		if knightRE.MatchString(clause) && knaveRE.MatchString(clause) {
			pieces = strings.Split(clause, ",")
		}
		for _, p := range pieces {
			readPiece(p, find, names, set)
		}
	}
	return got, !conflict && len(got) > 0
}

func readPiece(p string, find func(string) []token, names []string, set func(string, bool)) {
	var toks []roleTok
	for _, t := range find(p) {
		toks = append(toks, roleTok{pos: t.pos, name: t.word})
	}
	for _, loc := range knightRE.FindAllStringIndex(p, -1) {
		toks = append(toks, roleTok{pos: loc[0], knight: true})
	}
	for _, loc := range knaveRE.FindAllStringIndex(p, -1) {
		toks = append(toks, roleTok{pos: loc[0]})
	}
	sort.Slice(toks, func(i, j int) bool { return toks[i].pos < toks[j].pos })
	flip := notRE.MatchString(p)
	var people, rolesSeen []roleTok
	for _, t := range toks {
		if t.name != "" {
			people = append(people, t)
		} else {
			rolesSeen = append(rolesSeen, t)
		}
	}
	switch {
	case len(people) == 0 && len(rolesSeen) == 0 && noneRE.MatchString(p):
		// "Answer: none" to a question that asks for the knights.
		for _, n := range names {
			set(n, false)
		}
	case len(people) == 0 && len(rolesSeen) > 0:
		// "None of them is a knight", "All three are knaves".
		var knight bool
		switch {
		case noneRE.MatchString(p):
			knight = !rolesSeen[0].knight
		case allRE.MatchString(p) && !flip:
			knight = rolesSeen[0].knight
		default:
			return
		}
		for _, n := range names {
			set(n, knight)
		}
	case len(people) > 0 && len(rolesSeen) == 0:
		// Names alone answer the question asked: these are the knights.
		for _, t := range people {
			set(t.name, !flip)
		}
	case len(people) > 0:
		roleFirst := rolesSeen[0].pos < people[0].pos
		for i, t := range toks {
			if t.name == "" {
				continue
			}
			if r, ok := nearestRole(toks, i, roleFirst); ok {
				set(t.name, r != flip)
			}
		}
	}
}

// nearestRole is the role a person at toks[i] takes: the last role word
// before it when the piece leads with its role ("the knights are Ada and
// Cy"), else the next role word after it ("Ada and Cy are knights").
func nearestRole(toks []roleTok, i int, before bool) (bool, bool) {
	if before {
		for j := i - 1; j >= 0; j-- {
			if toks[j].name == "" {
				return toks[j].knight, true
			}
		}
	}
	for j := i + 1; j < len(toks); j++ {
		if toks[j].name == "" {
			return toks[j].knight, true
		}
	}
	return false, false
}

// knightsCheck accepts an answer that makes exactly want the knights among
// names. An answer that names only knights makes everyone else a knave, and
// one that names only knaves makes everyone else a knight ("Only Bram is a
// knave"); an answer that names both must place everyone.
func knightsCheck(names []string, want map[string]bool) func(string) bool {
	find := wordFinder(names)
	return func(text string) bool {
		region, marked := answerRegion(text)
		if marked {
			region = firstBlock(region)
		} else {
			region = lastLineWith(text, func(s string) []token {
				ts := find(s)
				if knightRE.MatchString(s) || knaveRE.MatchString(s) || noneRE.MatchString(s) {
					ts = append(ts, token{})
				}
				return ts
			}, 1)
		}
		got, ok := roles(region, names)
		if !ok {
			return false
		}
		knights, knaves := 0, 0
		for _, k := range got {
			if k {
				knights++
			} else {
				knaves++
			}
		}
		for _, n := range names {
			k, placed := got[n]
			if !placed && (knights == 0 || knaves == 0) {
				k, placed = knights == 0, true
			}
			if !placed || k != want[n] {
				return false
			}
		}
		return true
	}
}

// firstBlock is the text up to the first blank line after some content: the
// answer line or list, without the explanation that often follows it.
func firstBlock(text string) string {
	lines := strings.Split(text, "\n")
	var out []string
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			if len(out) > 0 {
				break
			}
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}
