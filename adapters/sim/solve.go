package sim

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// TokenCount is the simulated tokenizer: ceil(bytes/4), with a byte count
// of the UTF-8 text. Input tokens are TokenCount of the request's whole
// text (system prompt and every message, concatenated); output tokens are
// TokenCount of the answer.
func TokenCount(s string) int { return (len(s) + 3) / 4 }

// solution is a question the simulator could answer exactly.
type solution struct {
	// key is the answer in the canonical form conclusionKey extracts:
	// a number ("391"), "yes", "no", "undetermined" or "undefined".
	key string
	// statement explains it in one sentence, ending with the key when the
	// key is a number.
	statement string
	// terse is the shortest form of the answer.
	terse string
}

// solve answers arithmetic, numeric comparisons and syllogisms. ok is
// false when the question is none of those.
func solve(question string) (solution, bool) {
	// Cheap tests first: this runs on every call, the regular expressions
	// below only on questions that might match them.
	low := strings.ToLower(question)
	if strings.ContainsAny(low, "0123456789") {
		q := normalizeMath(question)
		if strings.Contains(q, "than") || strings.Contains(q, "equal") || strings.Contains(q, "same as") ||
			strings.ContainsAny(q, "<>=") || strings.Contains(q, "which") {
			if s, ok := solveComparison(q); ok {
				return s, true
			}
		}
		if strings.Contains(q, "%") {
			if s, ok := solvePercent(q); ok {
				return s, true
			}
		}
		if s, ok := solveArithmetic(q); ok {
			return s, true
		}
	}
	if strings.Contains(low, "all ") || strings.Contains(low, "no ") || strings.Contains(low, "some ") ||
		strings.Contains(low, "every ") || strings.Contains(low, "each ") {
		return solveSyllogism(question)
	}
	return solution{}, false
}

var (
	thousandsRe = regexp.MustCompile(`(\d),(\d{3})\b`)
	timesXRe    = regexp.MustCompile(`(\d)\s*[x×]\s*([\d(])`)
	wordOps     = strings.NewReplacer(
		" multiplied by ", " * ", " divided by ", " / ", " times ", " * ",
		" plus ", " + ", " minus ", " - ", "÷", "/", "−", "-", "**", "^",
	)
)

// normalizeMath rewrites operator words and symbols into + - * / ^.
func normalizeMath(s string) string {
	s = strings.ToLower(s)
	for thousandsRe.MatchString(s) {
		s = thousandsRe.ReplaceAllString(s, "$1$2")
	}
	s = timesXRe.ReplaceAllString(s, "$1 * $2")
	return wordOps.Replace(" " + s + " ")
}

var (
	exprRunRe  = regexp.MustCompile(`[0-9.()+\-*/^ ]+`)
	triggerRe  = regexp.MustCompile(`(what\s+is|what's|whats|compute|calculate|evaluate|solve|how\s+much\s+is|work\s+out|result\s+of|value\s+of)\W*$`)
	followsRe  = regexp.MustCompile(`^\s*[?=]`)
	percentRe  = regexp.MustCompile(`(\d+(?:\.\d+)?)\s*%\s*of\s*(\d+(?:\.\d+)?)`)
	nonSpaceRe = regexp.MustCompile(`\S`)
)

// solveArithmetic finds an arithmetic expression that the question asks
// about: one after "what is", "compute"…, one followed by "?" or "=", or
// one that makes up most of the question. Stray numbers in instructions
// ("score 0-1") are therefore not taken for the question.
func solveArithmetic(q string) (solution, bool) {
	total := len(nonSpaceRe.FindAllStringIndex(q, -1))
	for _, loc := range exprRunRe.FindAllStringIndex(q, -1) {
		start, end := loc[0], loc[1]
		candidate := trimUnbalanced(strings.TrimSpace(q[start:end]))
		if candidate == "" || len(candidate) > maxExprBytes {
			continue
		}
		v, ops, err := evalExpr(candidate)
		if ops == 0 || (err != nil && !errors.Is(err, errDivByZero)) {
			continue
		}
		asked := triggerRe.MatchString(q[max(0, start-30):start]) ||
			followsRe.MatchString(q[end:]) ||
			len(nonSpaceRe.FindAllStringIndex(candidate, -1))*2 >= total
		if !asked {
			continue
		}
		expr := strings.Join(strings.Fields(candidate), " ")
		if err != nil {
			return solution{key: "undefined", statement: "Undefined: " + expr + " divides by zero.", terse: "Undefined (division by zero)."}, true
		}
		r := formatNumber(v)
		return solution{key: r, statement: expr + " = " + r + ".", terse: r}, true
	}
	return solution{}, false
}

func solvePercent(q string) (solution, bool) {
	m := percentRe.FindStringSubmatch(q)
	if m == nil {
		return solution{}, false
	}
	a, _ := strconv.ParseFloat(m[1], 64)
	b, _ := strconv.ParseFloat(m[2], 64)
	r := formatNumber(a * b / 100)
	return solution{key: r, statement: fmt.Sprintf("%s%% of %s = %s.", m[1], m[2], r), terse: r}, true
}

// trimUnbalanced drops parentheses a run picked up from the surrounding
// prose ("(see 3-4)" yields "3-4)").
func trimUnbalanced(s string) string {
	for {
		depth, minDepth := 0, 0
		for _, c := range s {
			switch c {
			case '(':
				depth++
			case ')':
				depth--
				minDepth = min(minDepth, depth)
			}
		}
		switch {
		case minDepth < 0 && strings.HasSuffix(s, ")"):
			s = strings.TrimSpace(s[:len(s)-1])
		case depth > 0 && strings.HasPrefix(s, "("):
			s = strings.TrimSpace(s[1:])
		case depth > 0 && strings.HasSuffix(s, "("):
			s = strings.TrimSpace(s[:len(s)-1])
		default:
			return strings.Trim(s, " .")
		}
	}
}

// formatNumber prints a result the way a person would: integers without a
// decimal point, other values rounded to ten decimal places.
func formatNumber(v float64) string {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return "undefined"
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	r := math.Round(v*1e10) / 1e10
	if r == 0 {
		return strconv.FormatFloat(v, 'g', 10, 64)
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

var errDivByZero = errors.New("division by zero")

// maxExprBytes and maxExprDepth bound what evalExpr takes on: a prompt is
// caller input, and the parser recurses.
const (
	maxExprBytes = 1000
	maxExprDepth = 100
)

// evalExpr evaluates + - * / ^ and parentheses over decimal numbers, with
// the usual precedence (^ binds tightest and is right-associative). ops
// counts the binary operators.
func evalExpr(s string) (v float64, ops int, err error) {
	p := &exprParser{s: s}
	v, err = p.expr()
	if err == nil {
		p.space()
		if p.i != len(p.s) {
			err = fmt.Errorf("unexpected %q", p.s[p.i:])
		}
	}
	if p.divZero && err == nil {
		err = errDivByZero
	}
	return v, p.ops, err
}

type exprParser struct {
	s       string
	i       int
	ops     int
	depth   int
	divZero bool
}

func (p *exprParser) space() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *exprParser) peek() byte {
	p.space()
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *exprParser) expr() (float64, error) {
	v, err := p.term()
	for err == nil {
		op := p.peek()
		if op != '+' && op != '-' {
			break
		}
		p.i++
		p.ops++
		var w float64
		if w, err = p.term(); op == '+' {
			v += w
		} else {
			v -= w
		}
	}
	return v, err
}

func (p *exprParser) term() (float64, error) {
	v, err := p.unary()
	for err == nil {
		op := p.peek()
		if op != '*' && op != '/' {
			break
		}
		p.i++
		p.ops++
		var w float64
		if w, err = p.unary(); op == '*' {
			v *= w
		} else if w == 0 {
			p.divZero = true
		} else {
			v /= w
		}
	}
	return v, err
}

func (p *exprParser) unary() (float64, error) {
	if p.depth > maxExprDepth {
		return 0, errors.New("too deeply nested")
	}
	p.depth++
	defer func() { p.depth-- }()
	switch p.peek() {
	case '-':
		p.i++
		v, err := p.unary()
		return -v, err
	case '+':
		p.i++
		return p.unary()
	}
	return p.power()
}

func (p *exprParser) power() (float64, error) {
	v, err := p.primary()
	if err == nil && p.peek() == '^' {
		p.i++
		p.ops++
		var e float64
		if e, err = p.unary(); err == nil {
			v = math.Pow(v, e)
		}
	}
	return v, err
}

func (p *exprParser) primary() (float64, error) {
	c := p.peek()
	if c == '(' {
		p.i++
		v, err := p.expr()
		if err != nil {
			return 0, err
		}
		if p.peek() != ')' {
			return 0, errors.New("missing )")
		}
		p.i++
		return v, nil
	}
	start := p.i
	for p.i < len(p.s) && (p.s[p.i] >= '0' && p.s[p.i] <= '9' || p.s[p.i] == '.') {
		p.i++
	}
	if start == p.i {
		return 0, fmt.Errorf("expected a number at %d", start)
	}
	return strconv.ParseFloat(p.s[start:p.i], 64)
}

// numberExpr evaluates one side of a comparison: a number or an expression.
func numberExpr(s string) (float64, bool) {
	v, _, err := evalExpr(strings.TrimSpace(s))
	return v, err == nil
}

var (
	compareWordsRe = regexp.MustCompile(`\bis\s+([0-9.()+\-*/^ ]+?)\s+(greater|larger|bigger|more|higher|less|smaller|lower|fewer)\s+than\s+([0-9.()+\-*/^ ]+?)\s*\?`)
	compareEqualRe = regexp.MustCompile(`\bis\s+([0-9.()+\-*/^ ]+?)\s+(?:equal\s+to|the\s+same\s+as)\s+([0-9.()+\-*/^ ]+?)\s*\?`)
	compareSymRe   = regexp.MustCompile(`\bis\s+([0-9.()+\-*/^ ]+?)\s*(>=|<=|>|<|=)\s*([0-9.()+\-*/^ ]+?)\s*\?`)
	whichRe        = regexp.MustCompile(`which\s+is\s+(larger|greater|bigger|higher|more|smaller|less|lower)\s*[,:]?\s*([0-9.()+\-*/^ ]+?)\s+or\s+([0-9.()+\-*/^ ]+?)\s*\?`)
)

func solveComparison(q string) (solution, bool) {
	yesNo := func(ok bool, a, rel, b string) solution {
		a, b = strings.TrimSpace(a), strings.TrimSpace(b)
		if ok {
			return solution{key: "yes", statement: fmt.Sprintf("Yes — %s is %s %s.", a, rel, b), terse: "Yes."}
		}
		return solution{key: "no", statement: fmt.Sprintf("No — %s is not %s %s.", a, rel, b), terse: "No."}
	}
	if m := compareWordsRe.FindStringSubmatch(q); m != nil {
		a, okA := numberExpr(m[1])
		b, okB := numberExpr(m[3])
		if okA && okB {
			switch m[2] {
			case "greater", "larger", "bigger", "more", "higher":
				return yesNo(a > b, m[1], m[2]+" than", m[3]), true
			default:
				return yesNo(a < b, m[1], m[2]+" than", m[3]), true
			}
		}
	}
	if m := compareEqualRe.FindStringSubmatch(q); m != nil {
		a, okA := numberExpr(m[1])
		b, okB := numberExpr(m[2])
		if okA && okB {
			return yesNo(a == b, m[1], "equal to", m[2]), true
		}
	}
	if m := compareSymRe.FindStringSubmatch(q); m != nil {
		a, okA := numberExpr(m[1])
		b, okB := numberExpr(m[3])
		if okA && okB {
			ok := map[string]bool{">": a > b, "<": a < b, ">=": a >= b, "<=": a <= b, "=": a == b}[m[2]]
			return yesNo(ok, m[1], m[2], m[3]), true
		}
	}
	if m := whichRe.FindStringSubmatch(q); m != nil {
		a, okA := numberExpr(m[2])
		b, okB := numberExpr(m[3])
		if okA && okB {
			bigger := map[string]bool{"larger": true, "greater": true, "bigger": true, "higher": true, "more": true}[m[1]]
			pick := a
			if (b > a) == bigger {
				pick = b
			}
			r := formatNumber(pick)
			return solution{key: r, statement: fmt.Sprintf("Comparing %s and %s, the %s is %s.", strings.TrimSpace(m[2]), strings.TrimSpace(m[3]), m[1], r), terse: r}, true
		}
	}
	return solution{}, false
}

var (
	allRe      = regexp.MustCompile(`^(?:all|every|each)\s+(.+?)\s+(?:are|is)\s+(.+)$`)
	noneRe     = regexp.MustCompile(`^no\s+(.+?)\s+(?:are|is)\s+(.+)$`)
	someRe     = regexp.MustCompile(`^some\s+(.+?)\s+(?:are|is)\s+(.+)$`)
	factRe     = regexp.MustCompile(`^(.+?)\s+is\s+(.+)$`)
	askAllRe   = regexp.MustCompile(`^are\s+all\s+(.+?)\s+(.+)$`)
	sentenceRe = regexp.MustCompile(`[^.?!\n]+[.?!]?`)
)

// solveSyllogism answers "All A are B. X is an A. Is X a B?" and its
// relatives ("No A are B", chains of "All", "Are all A C?").
func solveSyllogism(text string) (solution, bool) {
	all := map[string][]string{}
	none := map[[2]string]bool{}
	facts := map[string][]string{} // entity → categories
	var askX, askB, showB string
	var askAll, showAll [2]string
	rules := 0
	for _, sentence := range sentenceRe.FindAllString(strings.ToLower(text), -1) {
		s := strings.TrimSpace(sentence)
		question := strings.HasSuffix(s, "?")
		s = strings.Trim(s, " .?!")
		if question {
			if m := askAllRe.FindStringSubmatch(s); m != nil {
				askAll = [2]string{category(m[1]), category(m[2])}
				showAll = [2]string{phrase(m[1]), phrase(m[2])}
				continue
			}
			if rest, ok := strings.CutPrefix(s, "is "); ok {
				askX, askB, showB = splitQuestion(rest, facts)
			}
			continue
		}
		switch {
		case allRe.MatchString(s):
			m := allRe.FindStringSubmatch(s)
			all[category(m[1])] = append(all[category(m[1])], category(m[2]))
			rules++
		case noneRe.MatchString(s):
			m := noneRe.FindStringSubmatch(s)
			none[[2]string{category(m[1]), category(m[2])}] = true
			rules++
		case someRe.MatchString(s):
			rules++
		case factRe.MatchString(s):
			m := factRe.FindStringSubmatch(s)
			x := strings.TrimSpace(m[1])
			facts[x] = append(facts[x], category(m[2]))
		}
	}
	if rules == 0 {
		return solution{}, false
	}
	closure := func(start []string) map[string]bool {
		seen := map[string]bool{}
		queue := append([]string(nil), start...)
		for len(queue) > 0 {
			c := queue[0]
			queue = queue[1:]
			if seen[c] {
				continue
			}
			seen[c] = true
			queue = append(queue, all[c]...)
		}
		return seen
	}
	verdict := func(from []string, target, subject, shown string) solution {
		reach := closure(from)
		if reach[target] {
			return solution{key: "yes", statement: fmt.Sprintf("Yes — it follows from the premises that %s %s.", subject, isA(shown)), terse: "Yes."}
		}
		for c := range reach {
			if none[[2]string{c, target}] || none[[2]string{target, c}] {
				return solution{key: "no", statement: fmt.Sprintf("No — the premises rule out that %s %s.", subject, isA(shown)), terse: "No."}
			}
		}
		return solution{key: "undetermined", statement: fmt.Sprintf("Cannot be determined: the premises do not settle whether %s %s.", subject, isA(shown)), terse: "Cannot be determined."}
	}
	switch {
	case askAll[0] != "":
		return verdict([]string{askAll[0]}, askAll[1], "every "+singularPhrase(showAll[0]), singularPhrase(showAll[1])), true
	case askX != "" && len(facts[askX]) > 0:
		name := askX
		if low := strings.ToLower(text); len(low) == len(text) {
			if i := strings.Index(low, askX); i >= 0 {
				name = text[i : i+len(askX)] // as the question spelled it
			}
		}
		return verdict(facts[askX], askB, name, singularPhrase(showB)), true
	}
	return solution{}, false
}

// splitQuestion splits "socrates a mortal" into the entity and the
// category (stemmed, and as written), preferring an entity the premises
// named.
func splitQuestion(rest string, facts map[string][]string) (x, stem, shown string) {
	for name := range facts {
		if after, ok := strings.CutPrefix(rest, name+" "); ok {
			return name, category(after), phrase(after)
		}
	}
	fields := strings.Fields(rest)
	if len(fields) < 2 {
		return "", "", ""
	}
	after := strings.Join(fields[1:], " ")
	return fields[0], category(after), phrase(after)
}

// phrase is a category phrase without its article, for display.
func phrase(s string) string {
	fields := strings.Fields(strings.ToLower(s))
	if len(fields) > 1 && (fields[0] == "a" || fields[0] == "an" || fields[0] == "the") {
		fields = fields[1:]
	}
	return strings.Join(fields, " ")
}

// singularPhrase turns "squares" into "square" for "every square".
func singularPhrase(s string) string {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return s
	}
	w := fields[len(fields)-1]
	if sg, ok := irregularPlurals[w]; ok {
		w = sg
	} else if strings.HasSuffix(w, "ies") && len(w) > 4 {
		w = w[:len(w)-3] + "y"
	} else if strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && len(w) > 3 {
		w = w[:len(w)-1]
	}
	fields[len(fields)-1] = w
	return strings.Join(fields, " ")
}

// category normalises a category phrase for matching: no article, and the
// last word stemmed so that "mammals", "mammal", "lazzies" and "lazzie"
// meet.
func category(s string) string {
	fields := strings.Fields(strings.ToLower(s))
	if len(fields) > 0 && (fields[0] == "a" || fields[0] == "an" || fields[0] == "the") {
		fields = fields[1:]
	}
	if len(fields) == 0 {
		return ""
	}
	fields[len(fields)-1] = stem(fields[len(fields)-1])
	return strings.Join(fields, " ")
}

var irregularPlurals = map[string]string{
	"men": "man", "women": "woman", "people": "person", "children": "child",
	"mice": "mouse", "geese": "goose", "feet": "foot", "teeth": "tooth",
}

func stem(w string) string {
	if s, ok := irregularPlurals[w]; ok {
		return s
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "i"
	case strings.HasSuffix(w, "sses"), strings.HasSuffix(w, "shes"), strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "xes"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && len(w) > 3:
		w = w[:len(w)-1]
	}
	switch {
	case strings.HasSuffix(w, "ie") && len(w) > 3:
		w = w[:len(w)-2] + "i"
	case strings.HasSuffix(w, "y") && len(w) > 2:
		w = w[:len(w)-1] + "i"
	}
	return w
}

func isA(category string) string {
	if category == "" {
		return "is so"
	}
	if strings.ContainsRune("aeiou", rune(category[0])) {
		return "is an " + category
	}
	return "is a " + category
}
