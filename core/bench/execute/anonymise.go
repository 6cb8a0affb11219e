package execute

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/conclavehq/conclave/core"
)

// Anonymiser strips from an answer what tells a judge who wrote it, and
// evens out the whitespace and markdown that would tell two engines apart
// by style (CERTIFY.md step 3). It is built once from a deployment's
// catalogue and is safe for concurrent use. docs/certify.md ("What the
// judges see") lists what it strips; the rule for names is:
//
//   - A distinctive name is replaced wherever it stands as a whole word,
//     case-insensitively: a catalogue name of two or more parts or with a
//     digit in it (engine ids, model names, families, mode ids, tickers and
//     names — "sim/nova-pro", "gpt-4o", "Conclave Standard"; the parts may
//     be joined by "-", "_", ".", "/", ":", a space or nothing, so "Nova
//     Pro" and "gpt4o" match too), and the brands in distinctiveBrands,
//     which are no English word ("ChatGPT", "Claude", "OpenAI"). A version
//     or variant that follows ("Claude 3.5 Sonnet", "GPT-4 Turbo") goes
//     with it.
//   - Any other catalogue word of four letters or more that is not a
//     generic variant word ("atlas", "swift", "sonnet", "nova", "google",
//     "meta"), and the brands in ordinaryBrands ("Llama", "Conclave",
//     "Command"), are English words too, so they are replaced only where
//     they refer to the author: "I am X", "made by X" said of the
//     answerer, a sign-off "— X", "(answered by X)".
//
// Code (fenced blocks and inline spans) is left exactly as written.
type Anonymiser struct {
	models, vendors *regexp.Regexp // distinctive names
	intro           *regexp.Regexp // a sentence that only introduces the author
	introName       *regexp.Regexp // "I am NAME": the name
	madeBy          *regexp.Regexp // "I was trained by NAME": the name
	signOff         *regexp.Regexp // a line that only signs the answer
	trailing        *regexp.Regexp // a sign-off at the end of a line
}

// distinctiveBrands are assistant, model and vendor names that are no
// English word, replaced anywhere.
var (
	distinctiveModels  = []string{"chatgpt", "gpt", "claude", "gemini", "mixtral", "qwen", "deepseek"}
	distinctiveVendors = []string{"openai", "anthropic", "mistral"}
	// ordinaryBrands are names that are English words as well, replaced
	// only where they name the author.
	ordinaryBrands = []string{"conclave", "llama", "grok", "copilot", "bard", "cohere", "command", "nova",
		"google", "amazon", "meta", "microsoft", "bedrock"}
	// firstNames are brands that are also people's first names: followed
	// by a capitalised word ("Claude Shannon") they are a person.
	firstNames = []string{"claude"}
	// genericWords are the parts of model names that name a variant, not a
	// model: never a name on their own.
	genericWords = []string{"pro", "max", "mini", "nano", "lite", "plus", "large", "medium", "small", "flash",
		"fast", "turbo", "chat", "instruct", "preview", "latest", "standard", "premium", "frontier", "native",
		"ultra", "sim", "model", "base", "experience"}
)

// variant is what may follow a name and is part of it: a version number
// ("-4o", " 3.5") or a variant word ("-mini", " Sonnet").
const variant = `(?:[-_ .]?\d+(?:\.\d+)*[a-z]*|[-_ ](?:mini|nano|turbo|pro|flash|ultra|opus|sonnet|haiku|large|medium|small|instruct|chat|coder|preview|latest|maverick|scout)\b)*`

// NewAnonymiser builds the anonymiser for a catalogue's engines and modes;
// nil gives one that knows only the built-in brands.
func NewAnonymiser(c *core.Catalog) *Anonymiser {
	var models, vendors, words []string
	name := func(list *[]string, n string) {
		parts := nameParts(n)
		if len(parts) == 0 {
			return
		}
		if len(parts) > 1 || strings.ContainsAny(n, "0123456789") {
			if len(strings.Join(parts, "")) >= 4 {
				*list = append(*list, strings.Join(parts, "[-_./: ]?"))
			}
		}
		for _, p := range strings.FieldsFunc(strings.ToLower(n), notAlnum) {
			if len(p) >= 4 && !slices.Contains(genericWords, p) && !strings.ContainsAny(p, "0123456789") {
				words = append(words, regexp.QuoteMeta(p))
			}
		}
	}
	if c != nil {
		for _, e := range c.Engines() {
			name(&models, e.ID)
			name(&models, e.Model)
			name(&vendors, e.Family)
			name(&vendors, e.Adapter)
			if prov, _, ok := strings.Cut(e.ID, "/"); ok {
				name(&vendors, prov)
			}
		}
		for _, m := range c.Modes() {
			name(&models, m.ID)
			name(&models, m.Ticker)
			name(&models, m.Name)
		}
	}
	models = append(models, distinctiveModels...)
	vendors = append(vendors, distinctiveVendors...)
	words = append(words, ordinaryBrands...)
	for _, b := range append(slices.Clone(distinctiveModels), distinctiveVendors...) {
		words = slices.DeleteFunc(words, func(w string) bool { return w == b })
	}
	models, vendors, words = longestFirst(models), longestFirst(vendors), longestFirst(words)
	all := alternation(append(append(slices.Clone(models), vendors...), words...)) + variant
	return &Anonymiser{
		models:  regexp.MustCompile(`(?i)(?:\b(the|an?)\s+)?\b` + alternation(models) + variant + `\b`),
		vendors: regexp.MustCompile(`(?i)(?:\b(the|an?)\s+)?\b` + alternation(vendors) + variant + `\b`),
		intro: regexp.MustCompile(`(?i)^(?:(?:hi|hello|hey)(?: there)?[,!.]?\s+)?(?:I am|I'm|I’m|my name is)\s+` + all +
			`(?:,?\s+(?:an?|your)\s+[^.!?,;:]*)?(?:,?\s+(?:developed|created|trained|made|built|designed|from)\s+(?:by\s+)?[^.!?,;:]*)?[.!?]*\s*$`),
		introName: regexp.MustCompile(`(?i)\b(?:I am|I'm|I’m|my name is)\s+(` + all + `)\b`),
		madeBy: regexp.MustCompile(`(?i)\b(?:I|I'm|I’m|me|my|model|assistant|AI|LLM|chatbot)\b[^.!?\n]{0,80}?\b(?:developed|created|trained|made|built|designed|powered|provided|operated)\s+by\s+(` +
			`(?:the\s+)?` + all + `)\b`),
		signOff: regexp.MustCompile(`(?im)^[ \t]*(?:(?:—|–|--|~)[ \t]*|(?:answered|written|generated|composed|sent)\s+(?:by|with|from)\s+)` +
			all + `[ \t]*(?:\([^)\n]*\))?[ \t.!]*$`),
		trailing: regexp.MustCompile(`(?im)[ \t]+(?:—|–|--)[ \t]*` + all + `[ \t.!]*$`),
	}
}

func notAlnum(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

// nameParts is a name cut into quoted words at punctuation, spaces and
// letter–digit boundaries: "llama4-maverick" → llama, 4, maverick.
func nameParts(n string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(strings.ToLower(n), notAlnum) {
		start := 0
		for i, r := range f {
			if i > start && unicode.IsDigit(r) != unicode.IsDigit(rune(f[i-1])) {
				out = append(out, regexp.QuoteMeta(f[start:i]))
				start = i
			}
		}
		out = append(out, regexp.QuoteMeta(f[start:]))
	}
	return out
}

func longestFirst(pats []string) []string {
	slices.SortFunc(pats, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	return slices.Compact(pats)
}

func alternation(pats []string) string { return "(?:" + strings.Join(pats, "|") + ")" }

// Fixed patterns that name no engine.
var (
	// asAnAI is the clause "As an AI language model (developed by X), ".
	asAnAI = regexp.MustCompile(`(?i)\bas an? (?:large )?(?:AI|A\.I\.|LLM|language model|artificial intelligence)(?:[ -](?:language )?(?:model|assistant|system|chatbot))?` +
		`(?:,?\s+(?:developed|created|trained|made|built|designed)\s+by\s+[^,.;:!?\n]+)?,\s*`)
	// attribution is "(answered by X)", "[generated by X]".
	attribution = regexp.MustCompile(`(?i)[ \t]*[(\[](?:answered|written|generated|composed|response|reply|answer)\s+(?:by|from|via)\s+[^)\]\n]{1,60}[)\]]`)
	// labelLine is a deliberation's answer label left in a synthesis.
	labelLine = regexp.MustCompile(`^[ \t]*\[(?:Answer [A-Z]|End of answers)\][ \t]*$`)
	// panelTalk is a sentence about the deliberation behind an answer:
	// its panel, seats, rounds and the answers it read.
	panelTalk = []*regexp.Regexp{
		regexp.MustCompile(`(?i)\b(?:the|our|this) panel(?:'s|’s)?\s+(?:members?|consensus|majority|views?|answers?|seats?|agreed|agrees|agree|disagreed|disagrees|concluded|converged|found)\b`),
		regexp.MustCompile(`(?i)\b(?:members|most|all|some|none|each|majority|two|three) of the panel\b`),
		regexp.MustCompile(`(?i)\bseat-\d+\b`),
		regexp.MustCompile(`(?i)\b(?:critique|deliberation) rounds?\b|\bround \d+ of \d+\b`),
		regexp.MustCompile(`(?i)\b(?:the|several|other|independent|all|both|most of the|all of the) (?:answers|responses) (?:above|provided|given|shown|supplied)\b`),
		regexp.MustCompile(`\bAnswers? [A-H](?: and [A-H])? (?:says?|said|argues?|argued|claims?|claimed|suggests?|suggested|notes?|noted|points? out|agrees?|is right|are right)\b`),
	}
	fence       = regexp.MustCompile("^[ \t]*(?:```|~~~)")
	inlineCode  = regexp.MustCompile("`[^`\n]+`")
	placeholder = regexp.MustCompile("\uE000(\\d+)\uE001")
	// Markdown that says nothing but style.
	starBullet = regexp.MustCompile(`^([ \t]*)[*+]([ \t]+)`)
	underBold  = regexp.MustCompile(`(^|[^\w])__([^_\n]*[^_\s][^_\n]*)__([^\w]|$)`)
	dunder     = regexp.MustCompile(`^[a-z0-9_]+$`)
	setext     = regexp.MustCompile(`^ {0,3}(=+|-+)[ \t]*$`)
	lineMarker = regexp.MustCompile(`^[ \t]*(?:[-*+>]|#{1,6}|\d+[.)])?[ \t]+`)
	emptyItem  = regexp.MustCompile(`^[ \t]*(?:[-*+>]|#{1,6}|\d+[.)])[ \t]*$`)
)

// Anonymise returns s as a judge may read it, and how many self-references
// it removed or neutralised (names replaced, sentences and sign-offs
// dropped; markdown and whitespace changes are not counted).
func (a *Anonymiser) Anonymise(s string) (string, int) {
	s = escapeMarks.Replace(strings.ReplaceAll(s, "\r\n", "\n"))
	var kept []string
	keep := func(x string) string {
		kept = append(kept, x)
		return fmt.Sprintf("\uE000%d\uE001", len(kept)-1)
	}
	// Code as written: a fenced block becomes one placeholder line, an
	// inline span a placeholder word.
	var lines []string
	var block []string
	for _, l := range strings.Split(s, "\n") {
		switch {
		case block != nil:
			block = append(block, l)
			if fence.MatchString(l) {
				lines = append(lines, keep(strings.Join(block, "\n")))
				block = nil
			}
		case fence.MatchString(l):
			block = []string{l}
		default:
			lines = append(lines, inlineCode.ReplaceAllStringFunc(l, keep))
		}
	}
	if block != nil {
		lines = append(lines, keep(strings.Join(block, "\n")))
	}

	lines = markdown(lines)
	n := 0
	out := lines[:0]
	for _, l := range lines {
		if labelLine.MatchString(l) {
			n++
			continue
		}
		l = count(&n, l, func(l string) string { return attribution.ReplaceAllString(l, "") })
		l = count(&n, l, func(l string) string { return a.signOff.ReplaceAllString(l, "") })
		l = count(&n, l, func(l string) string { return a.trailing.ReplaceAllString(l, "") })
		l = a.sentences(&n, l)
		l = count(&n, l, func(l string) string { return replaceGroup(a.madeBy, l, "the vendor") })
		l = count(&n, l, func(l string) string { return replaceGroup(a.introName, l, "the assistant") })
		l, k := neutral(a.models, l, "assistant")
		n += k
		l, k = neutral(a.vendors, l, "vendor")
		n += k
		if emptyItem.MatchString(l) {
			continue
		}
		out = append(out, l)
	}
	return normalise(restore(strings.Join(out, "\n"), kept)), n
}

// The anonymiser's own marks: a span kept aside (code) is replaced by a
// placeholder, its index between U+E000 and U+E001, two private-use
// characters. An answer may hold those characters too — a model can say
// anything — so before any placeholder is made each of them is escaped as
// a mark of its own ("\uE000o\uE001", "\uE000c\uE001"): no text of the
// answer can then be read as a placeholder, and restore puts the
// characters back as they were.
var (
	escapeMarks   = strings.NewReplacer("\uE000", "\uE000o\uE001", "\uE001", "\uE000c\uE001")
	unescapeMarks = strings.NewReplacer("\uE000o\uE001", "\uE000", "\uE000c\uE001", "\uE001")
	mark          = regexp.MustCompile("\uE000(\\d+|o|c)\uE001")
)

// restore puts back into s the spans kept aside and the characters
// escaped. An index that names no kept span cannot be made from an answer
// (its marks are escaped), but it is checked all the same, and dropped.
func restore(s string, kept []string) string {
	return mark.ReplaceAllStringFunc(s, func(m string) string {
		switch body := strings.TrimSuffix(strings.TrimPrefix(m, "\uE000"), "\uE001"); body {
		case "o":
			return "\uE000"
		case "c":
			return "\uE001"
		default:
			if i, err := strconv.Atoi(body); err == nil && i < len(kept) {
				return unescapeMarks.Replace(kept[i])
			}
			return ""
		}
	})
}

// count applies f to l and adds one to n when it changed anything; the
// patterns it is used with match at most once a line in practice.
func count(n *int, l string, f func(string) string) string {
	if out := f(l); out != l {
		*n++
		return out
	}
	return l
}

// sentences drops the sentences of a line that only introduce the author
// or talk about the deliberation, and the "As an AI model…," clauses.
func (a *Anonymiser) sentences(n *int, l string) string {
	marker := lineMarker.FindString(l)
	body := l[len(marker):]
	var b strings.Builder
	for _, sn := range splitSentences(body) {
		trimmed := strings.TrimSpace(sn)
		drop := a.intro.MatchString(trimmed)
		for _, p := range panelTalk {
			drop = drop || p.MatchString(trimmed)
		}
		if drop {
			*n++
			continue
		}
		if loc := asAnAI.FindStringIndex(sn); loc != nil {
			*n++
			rest := sn[loc[1]:]
			if strings.TrimSpace(sn[:loc[0]]) == "" {
				rest = upperFirst(rest)
			}
			sn = sn[:loc[0]] + rest
		}
		b.WriteString(sn)
	}
	if b.Len() == 0 && strings.TrimSpace(body) != "" {
		return ""
	}
	return marker + strings.TrimRight(b.String(), " \t")
}

// splitSentences cuts a line after each run of ., ! or ? (with closing
// quotes and brackets) that whitespace follows; each piece keeps its
// trailing whitespace, so the pieces join back to the line.
func splitSentences(l string) []string {
	var out []string
	start := 0
	for i := 0; i < len(l); i++ {
		if !strings.ContainsRune(".!?", rune(l[i])) {
			continue
		}
		j := i + 1
		for j < len(l) && strings.ContainsRune(".!?\"')]”’", rune(l[j])) {
			j++
		}
		if j < len(l) && l[j] != ' ' && l[j] != '\t' {
			i = j - 1
			continue
		}
		for j < len(l) && (l[j] == ' ' || l[j] == '\t') {
			j++
		}
		out = append(out, l[start:j])
		start, i = j, j-1
	}
	if start < len(l) {
		out = append(out, l[start:])
	}
	return out
}

// replaceGroup replaces each match's first group with word.
func replaceGroup(re *regexp.Regexp, l, word string) string {
	var b strings.Builder
	last := 0
	for _, m := range re.FindAllStringSubmatchIndex(l, -1) {
		b.WriteString(l[last:m[2]])
		b.WriteString(word)
		last = m[3]
	}
	b.WriteString(l[last:])
	return b.String()
}

// neutral replaces each name re matches with noun, keeping the sentence
// readable: "an OpenAI model" → "a vendor model", "Claude's" → "The
// assistant's" at the start of a sentence, "my GPT-4o" → "my assistant".
func neutral(re *regexp.Regexp, l, noun string) (string, int) {
	n := 0
	var b strings.Builder
	last := 0
	for _, m := range re.FindAllStringSubmatchIndex(l, -1) {
		if person(l, m) {
			continue
		}
		n++
		before := l[:m[0]]
		b.WriteString(l[last:m[0]])
		var article string
		switch {
		case m[2] >= 0 && strings.EqualFold(l[m[2]:m[3]], "the"):
			article = l[m[2]:m[3]]
		case m[2] >= 0:
			article = "a"
			if strings.ContainsRune("aeiou", rune(noun[0])) {
				article = "an"
			}
			if r, _ := utf8.DecodeRuneInString(l[m[2]:]); unicode.IsUpper(r) {
				article = upperFirst(article)
			}
		case possessed(before):
		default:
			article = "the"
			if r, _ := utf8.DecodeRuneInString(l[m[0]:]); unicode.IsUpper(r) && sentenceStart(before) {
				article = "The"
			}
		}
		if article != "" {
			b.WriteString(article + " ")
		}
		b.WriteString(noun)
		last = m[1]
	}
	if n == 0 {
		return l, 0
	}
	b.WriteString(l[last:])
	return b.String(), n
}

// person reports whether a match is a brand that is also a first name,
// followed by a surname ("Claude Shannon"), which is left alone.
func person(l string, m []int) bool {
	start := m[0]
	if m[3] >= 0 {
		start = m[3] + 1
	}
	name := strings.TrimSpace(l[start:m[1]])
	if !slices.Contains(firstNames, strings.ToLower(name)) {
		return false
	}
	rest := l[m[1]:]
	if len(rest) < 3 || rest[0] != ' ' {
		return false
	}
	r, _ := utf8.DecodeRuneInString(rest[1:])
	return unicode.IsUpper(r)
}

// possessed reports whether a name follows a possessive ("my", "its",
// "OpenAI's"), so that no article goes before its replacement.
func possessed(before string) bool {
	t := strings.ToLower(strings.TrimRight(before, " \t"))
	for _, p := range []string{"my", "your", "its", "our", "their", "his", "her"} {
		if t == p || strings.HasSuffix(t, " "+p) {
			return true
		}
	}
	return strings.HasSuffix(t, "'s") || strings.HasSuffix(t, "’s")
}

func sentenceStart(before string) bool {
	t := strings.TrimRight(before, " \t*_#>-\"“(")
	return t == "" || strings.ContainsAny(t[len(t)-1:], ".!?:")
}

func upperFirst(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	if size == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[size:]
}

// markdown evens out the markdown that only styles: "*" and "+" bullets
// become "-", "__bold__" becomes "**bold**" (but not one lower-case
// identifier, which may be a Python name such as __init__), and setext headings become ATX ("Title\n===" → "# Title").
func markdown(lines []string) []string {
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		if m := setext.FindStringSubmatch(l); m != nil && len(out) > 0 {
			prev := out[len(out)-1]
			if strings.TrimSpace(prev) != "" && lineMarker.FindString(prev) == "" && !placeholder.MatchString(prev) {
				level := "## "
				if m[1][0] == '=' {
					level = "# "
				}
				out[len(out)-1] = level + strings.TrimSpace(prev)
				continue
			}
		}
		l = starBullet.ReplaceAllString(l, "${1}-${2}")
		for range 2 { // a match takes the character before the next one
			l = underBold.ReplaceAllStringFunc(l, func(m string) string {
				g := underBold.FindStringSubmatch(m)
				if dunder.MatchString(g[2]) {
					return m
				}
				return g[1] + "**" + g[2] + "**" + g[3]
			})
		}
		out = append(out, l)
	}
	return out
}
