package sim

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"unicode"
)

// shape is what kind of open question was asked.
type shape struct {
	kind    string    // "yesno", "choice" or "open"
	options [2]string // the two options of a choice
	topics  []string  // a few content words of the question
}

var (
	choiceRe  = regexp.MustCompile(`(?i)([\p{L}\p{N}][\p{L}\p{N}+#.\-]*)\s*,?\s+or\s+(?:an?\s+|the\s+)?([\p{L}\p{N}][\p{L}\p{N}+#.\-]*)`)
	wordRe    = regexp.MustCompile(`[\p{L}][\p{L}\p{N}'\-]*`)
	yesNoOpen = map[string]bool{
		"is": true, "are": true, "should": true, "can": true, "could": true, "will": true, "would": true,
		"do": true, "does": true, "did": true, "was": true, "were": true, "has": true, "have": true,
		"must": true, "shall": true, "may": true,
	}
	stopWords = map[string]bool{}
)

func init() {
	for _, w := range strings.Fields(`a about above after again against all also am an and any are aren't as at be
		because been before being below between both but by can could did do does doing down during each either
		else ever every few for from further get got had has have having he her here hers him his how however i if
		in into is it its itself just least less let like make many may me might more most much must my need
		neither never no nor not now of off often on once one only or other ought our ours out over own per
		please rather really same say says shall she should so some such than that the their theirs them then
		there these they thing things think this those though through thus to too under until up upon us use
		used using very want was way we well were what when where whether which while who whom whose why will
		with within without would yes yet you your yours best better good worth give tell explain describe
		question answer consider considering versus vs`) {
		stopWords[w] = true
	}
}

// analyze classifies an open question and picks its topics.
func analyze(question string) shape {
	q := strings.TrimSpace(question)
	sh := shape{kind: "open"}
	if strings.Contains(q, "?") {
		if ms := choiceRe.FindAllStringSubmatch(q, -1); len(ms) > 0 {
			m := ms[len(ms)-1]
			a, b := strings.Trim(m[1], ".-"), strings.Trim(m[2], ".-")
			if a != "" && b != "" && !strings.EqualFold(a, b) && !stopWords[strings.ToLower(a)] && !stopWords[strings.ToLower(b)] {
				sh.kind, sh.options = "choice", [2]string{a, b}
			}
		}
		if sh.kind == "open" {
			if first := firstWord(q); yesNoOpen[first] {
				sh.kind = "yesno"
			}
		}
	}
	seen := map[string]bool{}
	for _, w := range wordRe.FindAllString(q, -1) {
		low := strings.ToLower(strings.Trim(w, "'-"))
		upper := strings.IndexFunc(w, unicode.IsUpper) > 0 || strings.ToUpper(w) == w && len(w) > 1
		if stopWords[low] || seen[low] || (len(low) < 4 && !upper) || strings.EqualFold(low, sh.options[0]) || strings.EqualFold(low, sh.options[1]) {
			continue
		}
		seen[low] = true
		sh.topics = append(sh.topics, w)
		if len(sh.topics) == 4 {
			break
		}
	}
	for _, filler := range []string{"cost", "risk", "timing", "scope"} {
		if len(sh.topics) >= 4 {
			break
		}
		sh.topics = append(sh.topics, filler)
	}
	return sh
}

func firstWord(s string) string {
	m := wordRe.FindString(s)
	return strings.ToLower(m)
}

// stance is the conclusion an engine reaches on an open question, in the
// canonical form conclusionKey extracts. The panel's consensus depends on
// the seed and the question only; each engine breaks from it with
// probability dissent, so engines sometimes disagree.
func stance(sh shape, seed int64, model, question string, dissent float64) string {
	q := canonical(question)
	consensus := seeded(seed, "consensus", q).IntN(2)
	if seeded(seed, "dissent", model, q).Float64() < dissent {
		consensus = 1 - consensus
	}
	switch sh.kind {
	case "yesno":
		return []string{"yes", "no"}[consensus]
	case "choice":
		return canonical(sh.options[consensus])
	}
	return "the deciding factor is " + canonical(sh.topics[consensus])
}

// bodySentences are the raw material of prose answers; %[1]s…%[3]s are
// topics.
var bodySentences = []string{
	"The first thing to weigh is %[1]s, because it shapes most of what follows.",
	"%[2]s matters because it limits how far %[1]s can go in practice.",
	"In most settings %[3]s is where the hidden costs show up.",
	"A common mistake is to treat %[1]s and %[2]s as independent; they rarely are.",
	"If %[2]s is already in place, the extra effort is small.",
	"Experience with similar cases suggests that %[1]s pays off only when it is measured.",
	"It helps to decide up front what would change your mind about %[3]s.",
	"Reversibility matters: prefer the option you can undo if %[2]s turns out differently.",
	"The trade-off is between speed now and flexibility later, mostly through %[1]s.",
	"Teams that skip thinking about %[3]s usually revisit the decision within a year.",
	"None of this is absolute; the context around %[2]s can reverse the conclusion.",
	"A small experiment on %[1]s is cheaper than a long debate.",
	"Costs are easier to estimate than benefits here, especially for %[3]s.",
	"The strongest argument against is the risk that %[2]s grows faster than expected.",
	"Whatever you choose, write down the assumptions about %[1]s.",
	"Second-order effects on %[3]s are easy to underestimate.",
	"Look at who carries the burden of %[2]s once the decision is made.",
	"The evidence on %[1]s is mixed, so weigh it by how close it is to your situation.",
}

var openers = map[string]string{
	"plain":      "",
	"terse":      "",
	"structured": "Short answer first, then the reasoning.",
	"thorough":   "Let me work through the main considerations.",
	"balanced":   "This is a judgement call, and it turns on a few things.",
	"nuanced":    "There are several threads worth separating here.",
	"brisk":      "Quick take:",
	"sectioned":  "## Considerations",
}

// writeProse writes an answer of about target tokens in the engine's style
// that ends with "Conclusion: <concl>.".
func writeProse(style string, sh shape, concl string, r *rand.Rand, target int) string {
	var stanceLine string
	switch sh.kind {
	case "yesno":
		if concl == "no" {
			stanceLine = "On balance, no: the costs outweigh the benefits here."
		} else if concl == "yes" {
			stanceLine = "On balance, yes: the benefits outweigh the costs here."
		}
	case "choice":
		stanceLine = fmt.Sprintf("%s is the better fit here.", capitalize(concl))
	}
	if stanceLine == "" {
		stanceLine = fmt.Sprintf("On balance, %s.", concl)
	}
	tail := "Conclusion: " + concl + "."

	order := r.Perm(len(bodySentences))
	budget := 4*target - len(stanceLine) - len(tail)
	var body []string
	used := 0
	for i := 0; used < budget && i < 4*len(bodySentences); i++ {
		t := sh.topics
		shift := i / len(bodySentences) // a fresh pass rotates the topics
		s := fmt.Sprintf(bodySentences[order[i%len(order)]], t[shift%len(t)], t[(shift+1)%len(t)], t[(shift+2)%len(t)])
		s = capitalize(s)
		body = append(body, s)
		used += len(s) + 2
	}

	var b strings.Builder
	if o := openers[style]; o != "" {
		b.WriteString(o)
		b.WriteString("\n\n")
	}
	switch style {
	case "structured", "brisk":
		if style == "structured" {
			b.WriteString(stanceLine + "\n\n")
		}
		for _, s := range body {
			b.WriteString("- " + s + "\n")
		}
		if style == "brisk" {
			b.WriteString("\n" + stanceLine + "\n")
		}
	case "thorough":
		for i, s := range body {
			fmt.Fprintf(&b, "%d. %s\n", i+1, s)
		}
		b.WriteString("\n" + stanceLine + "\n")
	case "sectioned":
		writeParagraphs(&b, body, 3)
		b.WriteString("\n## Recommendation\n\n" + stanceLine + "\n")
	case "terse":
		b.WriteString(stanceLine + " " + strings.Join(body, " ") + "\n")
	default:
		writeParagraphs(&b, body, 3)
		b.WriteString("\n" + stanceLine + "\n")
	}
	b.WriteString("\n" + tail)
	return b.String()
}

func writeParagraphs(b *strings.Builder, sentences []string, per int) {
	for i := 0; i < len(sentences); i += per {
		b.WriteString(strings.Join(sentences[i:min(i+per, len(sentences))], " "))
		b.WriteString("\n")
		if i+per < len(sentences) {
			b.WriteString("\n")
		}
	}
}

func capitalize(s string) string {
	for i, r := range s {
		return string(unicode.ToUpper(r)) + s[i+len(string(r)):]
	}
	return s
}
