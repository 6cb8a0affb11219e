package bank

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/conclavehq/conclave/core"
)

// Logic families: knights and knaves, logic grids, finishing orders and
// "who did it". Every puzzle is checked to have exactly one solution by
// trying every candidate; a puzzle that has two is thrown away and the next
// stream tried.

// ---- knights and knaves ----

type knightStatement struct {
	text string
	eval func(k []bool) bool
}

// knightsPuzzle is who says what; k[i] is true when person i is a knight.
type knightsPuzzle struct {
	names []string
	says  []knightStatement
}

// solutions lists the consistent assignments: every knight's statement
// true, every knave's false.
func (p knightsPuzzle) solutions() [][]bool {
	var out [][]bool
	n := len(p.names)
	for mask := 0; mask < 1<<n; mask++ {
		k := make([]bool, n)
		for i := range k {
			k[i] = mask&(1<<i) != 0
		}
		ok := true
		for i, s := range p.says {
			if s.eval(k) != k[i] {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, k)
		}
	}
	return out
}

func count(k []bool) int {
	c := 0
	for _, x := range k {
		if x {
			c++
		}
	}
	return c
}

// knightSay makes a statement for speaker i; the kinds grow with the level.
func knightSay(r *rng, names []string, i, level int) knightStatement {
	n := len(names)
	others := make([]int, 0, n-1)
	for j := range n {
		if j != i {
			others = append(others, j)
		}
	}
	j := pick(r, others)
	kinds := 4
	if level >= 2 && n >= 3 {
		kinds = 7
	}
	if level >= 3 {
		kinds = 9
	}
	switch r.intn(kinds) {
	case 0:
		return knightStatement{names[j] + " is a knight.", func(k []bool) bool { return k[j] }}
	case 1:
		return knightStatement{names[j] + " is a knave.", func(k []bool) bool { return !k[j] }}
	case 2:
		return knightStatement{names[j] + " and I are the same kind.", func(k []bool) bool { return k[i] == k[j] }}
	case 3:
		if n == 2 {
			return knightStatement{"At least one of us is a knave.", func(k []bool) bool { return !k[0] || !k[1] }}
		}
		return knightStatement{names[j] + " and I are different kinds.", func(k []bool) bool { return k[i] != k[j] }}
	case 4:
		c := r.between(0, n)
		text := fmt.Sprintf("Exactly %s of us are knights.", numberWord(c))
		switch c {
		case 0:
			text = "None of us is a knight."
		case 1:
			text = "Exactly one of us is a knight."
		}
		return knightStatement{text, func(k []bool) bool { return count(k) == c }}
	case 5:
		l := pick(r, others)
		if l == j {
			return knightSay(r, names, i, level)
		}
		return knightStatement{fmt.Sprintf("Exactly one of %s and %s is a knight.", names[j], names[l]),
			func(k []bool) bool { return k[j] != k[l] }}
	case 6:
		l := pick(r, others)
		if l == j {
			return knightSay(r, names, i, level)
		}
		return knightStatement{fmt.Sprintf("At least one of %s and %s is a knave.", names[j], names[l]),
			func(k []bool) bool { return !k[j] || !k[l] }}
	case 7:
		l := pick(r, others)
		if l == j {
			return knightSay(r, names, i, level)
		}
		return knightStatement{fmt.Sprintf("If %s is a knight, then %s is a knave.", names[j], names[l]),
			func(k []bool) bool { return !k[j] || !k[l] }}
	default:
		return knightStatement{fmt.Sprintf("%s would tell you that I am a knave.", names[j]),
			func(k []bool) bool { return k[j] != k[i] }}
	}
}

func numberWord(n int) string {
	return []string{"none", "one", "two", "three", "four", "five", "six"}[n]
}

// knightsAnswer writes an assignment as the reference answer.
func knightsAnswer(names []string, k []bool) string {
	var kn, kv []string
	for i, n := range names {
		if k[i] {
			kn = append(kn, n)
		} else {
			kv = append(kv, n)
		}
	}
	list := func(xs []string) string {
		if len(xs) == 0 {
			return "none"
		}
		return strings.Join(xs, ", ")
	}
	return "Knights: " + list(kn) + ". Knaves: " + list(kv) + "."
}

func genKnights(r *rng, level int) (problem, bool) {
	n := level + 1
	names := sample(r, people, n)
	p := knightsPuzzle{names: names}
	var lines []string
	for i := range n {
		s := knightSay(r, names, i, level)
		p.says = append(p.says, s)
		lines = append(lines, fmt.Sprintf("%s says: \"%s\"", names[i], s.text))
	}
	sols := p.solutions()
	if len(sols) != 1 {
		return problem{}, false
	}
	want := sols[0]
	wantSet := map[string]bool{}
	for i, nm := range names {
		wantSet[nm] = want[i]
	}
	q := fmt.Sprintf("On an island every inhabitant is either a knight, who always tells the truth, or a knave, who always "+
		"lies. You meet %s. %s Which of them are knights and which are knaves? "+askLine+" "+
		"\"Answer: Knights: <names or none>. Knaves: <names or none>.\"", core.List(names), strings.Join(lines, " "))
	pr := problem{question: q, answer: knightsAnswer(names, want), check: knightsCheck(names, wantSet), spec: p}
	for i := range n {
		other := append([]bool(nil), want...)
		other[i] = !other[i]
		pr.decoys = append(pr.decoys, knightsAnswer(names, other))
	}
	flipped := make([]bool, n)
	for i := range want {
		flipped[i] = !want[i]
	}
	pr.decoys = append(pr.decoys, knightsAnswer(names, flipped))
	return pr, true
}

// ---- logic grids ----

type gridCategory struct {
	intro  string // "The houses are painted %s, one colour to a house."
	values []string
	subj   func(v string) string           // "the tea drinker"
	pred   func(v string, neg bool) string // "drinks tea", "does not drink tea"
}

func verbPred(yes, no string) func(string, bool) string {
	return func(v string, neg bool) string {
		if neg {
			return fmt.Sprintf(no, v)
		}
		return fmt.Sprintf(yes, v)
	}
}

var gridPeople = gridCategory{
	values: people,
	subj:   func(v string) string { return v },
	pred:   verbPred("is %s", "is not %s"),
}

var gridCategories = []gridCategory{
	{intro: "The houses are painted %s, one colour to a house.",
		values: []string{"red", "green", "blue", "white", "yellow"},
		subj:   func(v string) string { return "the owner of the " + v + " house" },
		pred:   verbPred("lives in the %s house", "does not live in the %s house")},
	{intro: "Each person keeps one pet, and no two the same kind: %s.",
		values: []string{"cat", "dog", "parrot", "tortoise", "rabbit"},
		subj:   func(v string) string { return "the " + v + "'s owner" },
		pred:   verbPred("keeps the %s", "does not keep the %s")},
	{intro: "Each person has a different favourite drink: %s.",
		values: []string{"tea", "coffee", "milk", "juice", "cocoa"},
		subj:   func(v string) string { return "the " + v + " drinker" },
		pred:   verbPred("drinks %s", "does not drink %s")},
	{intro: "Each person has a different job: %s.",
		values: []string{"baker", "pilot", "nurse", "tailor", "farmer"},
		subj:   func(v string) string { return "the " + v },
		pred:   verbPred("is the %s", "is not the %s")},
	{intro: "Each person plays a different instrument: %s.",
		values: []string{"harp", "drum", "flute", "violin", "cello"},
		subj:   func(v string) string { return "the " + v + " player" },
		pred:   verbPred("plays the %s", "does not play the %s")},
}

type gridClueKind int

const (
	clueSame gridClueKind = iota
	clueNotSame
	clueAt
	clueNotAt
	clueNextTo
	clueLeftOf     // immediately to the left
	clueSomewhereL // somewhere to the left
)

// gridClue relates value v1 of category c1 to value v2 of category c2, or
// (at, not at) to house h.
type gridClue struct {
	kind           gridClueKind
	c1, v1, c2, v2 int
	h              int
}

// holds evaluates the clue on pos, where pos[c][v] is the house (0-based)
// of value v of category c.
func (cl gridClue) holds(pos [][]int) bool {
	a := pos[cl.c1][cl.v1]
	switch cl.kind {
	case clueAt:
		return a == cl.h
	case clueNotAt:
		return a != cl.h
	}
	b := pos[cl.c2][cl.v2]
	switch cl.kind {
	case clueSame:
		return a == b
	case clueNotSame:
		return a != b
	case clueNextTo:
		return a-b == 1 || b-a == 1
	case clueLeftOf:
		return b-a == 1
	default:
		return a < b
	}
}

// needs is the highest category the clue reads.
func (cl gridClue) needs() int {
	if cl.kind == clueAt || cl.kind == clueNotAt {
		return cl.c1
	}
	return max(cl.c1, cl.c2)
}

// gridPuzzle is a logic grid: n houses, categories (0 is the people), and
// clues.
type gridPuzzle struct {
	n     int
	cats  []gridCategory
	clues []gridClue
	ask   [2]int // the category and value whose person is asked for
}

func (g gridPuzzle) text(cl gridClue) string {
	c1, c2 := g.cats[cl.c1], g.cats[cl.c1]
	if cl.kind != clueAt && cl.kind != clueNotAt {
		c2 = g.cats[cl.c2]
	}
	s1 := c1.subj(c1.values[cl.v1])
	switch cl.kind {
	case clueAt:
		return capital(s1) + fmt.Sprintf(" lives in house %d.", cl.h+1)
	case clueNotAt:
		return capital(s1) + fmt.Sprintf(" does not live in house %d.", cl.h+1)
	}
	s2 := c2.subj(c2.values[cl.v2])
	switch cl.kind {
	case clueSame, clueNotSame:
		if cl.c2 == 0 { // a person reads best as the subject
			return capital(s2) + " " + c1.pred(c1.values[cl.v1], cl.kind == clueNotSame) + "."
		}
		return capital(s1) + " " + c2.pred(c2.values[cl.v2], cl.kind == clueNotSame) + "."
	case clueNextTo:
		return capital(s1) + " lives next door to " + s2 + "."
	case clueLeftOf:
		return capital(s1) + " lives directly to the left of " + s2 + "."
	default:
		return capital(s1) + " lives somewhere to the left of " + s2 + "."
	}
}

// count counts the solutions of the clues, stopping at limit. It assigns
// one category at a time and checks each clue as soon as its categories
// are placed.
func (g gridPuzzle) count(clues []gridClue, limit int) int {
	perms := permutations(g.n)
	byCat := make([][]gridClue, len(g.cats))
	for _, cl := range clues {
		byCat[cl.needs()] = append(byCat[cl.needs()], cl)
	}
	pos := make([][]int, len(g.cats))
	found := 0
	var place func(c int)
	place = func(c int) {
		if c == len(g.cats) {
			found++
			return
		}
		for _, p := range perms {
			pos[c] = p
			ok := true
			for _, cl := range byCat[c] {
				if !cl.holds(pos) {
					ok = false
					break
				}
			}
			if ok {
				place(c + 1)
				if found >= limit {
					return
				}
			}
		}
	}
	place(0)
	return found
}

// permutations lists every permutation of 0..n-1 in lexicographic order;
// the lists up to 6 are made once.
func permutations(n int) [][]int {
	if n < len(permTable) {
		return permTable[n]
	}
	return makePermutations(n)
}

var permTable = func() [][][]int {
	t := make([][][]int, 7)
	for n := range t {
		t[n] = makePermutations(n)
	}
	return t
}()

func makePermutations(n int) [][]int {
	var out [][]int
	p := make([]int, n)
	used := make([]bool, n)
	var rec func(i int)
	rec = func(i int) {
		if i == n {
			out = append(out, append([]int(nil), p...))
			return
		}
		for v := range n {
			if !used[v] {
				used[v], p[i] = true, v
				rec(i + 1)
				used[v] = false
			}
		}
	}
	rec(0)
	return out
}

// randomGridClue draws a clue true of the solution sol.
func randomGridClue(r *rng, g gridPuzzle, sol [][]int) (gridClue, bool) {
	c1 := r.intn(len(g.cats))
	v1 := r.intn(g.n)
	c2 := r.intn(len(g.cats))
	v2 := r.intn(g.n)
	cl := gridClue{kind: gridClueKind(r.intn(7)), c1: c1, v1: v1, c2: c2, v2: v2, h: r.intn(g.n)}
	if cl.kind != clueAt && cl.kind != clueNotAt && (c1 == c2 || cl.kind <= clueNotSame && c1 == 0 && c2 == 0) {
		return gridClue{}, false
	}
	if cl.kind == clueAt && r.chance(1, 2) { // placements give too much away; keep them rare
		return gridClue{}, false
	}
	return cl, cl.holds(sol)
}

// buildClues adds random true clues until they have one solution, then
// drops every clue the others make redundant. count need only count up to
// two.
func buildClues[C any](r *rng, draw func() (C, bool), count func([]C) int, budget int) ([]C, bool) {
	var clues []C
	for tries := 0; tries < budget; tries++ {
		c, ok := draw()
		if !ok {
			continue
		}
		clues = append(clues, c)
		if count(clues) == 1 {
			break
		}
	}
	if count(clues) != 1 {
		return nil, false
	}
	order := r.perm(len(clues))
	drop := map[int]bool{}
	for _, i := range order {
		drop[i] = true
		var rest []C
		for j, c := range clues {
			if !drop[j] {
				rest = append(rest, c)
			}
		}
		if count(rest) != 1 {
			drop[i] = false
		}
	}
	var out []C
	for j, c := range clues {
		if !drop[j] {
			out = append(out, c)
		}
	}
	shuffle(r, out)
	return out, true
}

var houseWords = []string{"", "", "", "Three", "Four", "Five"}

func genGrid(r *rng, level int) (problem, bool) {
	n, extra := 3, 2
	switch level {
	case 2:
		n = 4
	case 3:
		n, extra = 4, 3
	}
	g := gridPuzzle{n: n}
	pc := gridPeople
	pc.values = sample(r, people, n)
	g.cats = append(g.cats, pc)
	for _, ci := range sample(r, []int{0, 1, 2, 3, 4}, extra) {
		c := gridCategories[ci]
		c.values = sample(r, c.values, n)
		g.cats = append(g.cats, c)
	}
	sol := make([][]int, len(g.cats))
	for c := range sol {
		sol[c] = r.perm(n)
	}
	clues, ok := buildClues(r, func() (gridClue, bool) { return randomGridClue(r, g, sol) },
		func(cs []gridClue) int { return g.count(cs, 2) }, 400)
	if !ok {
		return problem{}, false
	}
	g.clues = clues
	// Ask who holds a value no clue ties straight to a person.
	tc, tv := 1+r.intn(extra), r.intn(n)
	for _, cl := range clues {
		if cl.kind == clueSame && (cl.c1 == tc && cl.v1 == tv && cl.c2 == 0 || cl.c2 == tc && cl.v2 == tv && cl.c1 == 0) {
			return problem{}, false
		}
	}
	g.ask = [2]int{tc, tv}
	house := sol[tc][tv]
	var who string
	for v, h := range sol[0] {
		if h == house {
			who = pc.values[v]
		}
	}
	var intro []string
	for _, c := range g.cats[1:] {
		intro = append(intro, fmt.Sprintf(c.intro, core.List(c.values)))
	}
	var lines []string
	for i, cl := range clues {
		lines = append(lines, fmt.Sprintf("%d. %s", i+1, g.text(cl)))
	}
	q := fmt.Sprintf("%s houses stand in a row, numbered 1 to %d from left to right. %s live in them, one to a house. "+
		"%s\n%s\nWho %s? %s", houseWords[n], n, core.List(pc.values), strings.Join(intro, " "), strings.Join(lines, "\n"),
		g.cats[tc].pred(g.cats[tc].values[tv], false), askName)
	pr := problem{question: q, answer: who, check: choiceCheck(pc.values, who), spec: g}
	for _, v := range pc.values {
		if v != who {
			pr.decoys = append(pr.decoys, v)
		}
	}
	return pr, true
}

// ---- finishing orders ----

type orderClueKind int

const (
	orderAhead orderClueKind = iota
	orderJustAhead
	orderGap     // exactly k finished between
	orderNotAt   // did not finish in place p
	orderBetween // b finished between a and c
	orderAt
)

type orderClue struct {
	kind    orderClueKind
	a, b, c int
	k       int
}

// holds reads place[x], the 0-based finishing place of runner x.
func (cl orderClue) holds(place []int) bool {
	pa, pb := place[cl.a], place[cl.b]
	switch cl.kind {
	case orderAhead:
		return pa < pb
	case orderJustAhead:
		return pb == pa+1
	case orderGap:
		return abs(pa-pb) == cl.k+1
	case orderNotAt:
		return pa != cl.k
	case orderAt:
		return pa == cl.k
	default:
		pc := place[cl.c]
		return pa < pb && pb < pc || pc < pb && pb < pa
	}
}

var placeWords = []string{"first", "second", "third", "fourth", "fifth", "sixth"}

// orderPuzzle is a finishing order of n runners and its clues.
type orderPuzzle struct {
	names []string
	clues []orderClue
	ask   int // the place asked for (0-based), or -1 for the whole order
}

func (p orderPuzzle) text(cl orderClue) string {
	a, b := p.names[cl.a], p.names[cl.b]
	switch cl.kind {
	case orderAhead:
		return a + " finished ahead of " + b + "."
	case orderJustAhead:
		return a + " finished immediately ahead of " + b + "."
	case orderGap:
		if cl.k == 1 {
			return fmt.Sprintf("Exactly one runner finished between %s and %s.", a, b)
		}
		return fmt.Sprintf("Exactly %s runners finished between %s and %s.", numberWord(cl.k), a, b)
	case orderNotAt:
		if cl.k == len(p.names)-1 {
			return a + " did not finish last."
		}
		return a + " did not finish " + placeWords[cl.k] + "."
	case orderAt:
		return a + " finished " + placeWords[cl.k] + "."
	default:
		return fmt.Sprintf("%s finished somewhere between %s and %s.", b, a, p.names[cl.c])
	}
}

// count counts the orders (as place vectors) the clues allow.
func (p orderPuzzle) count(clues []orderClue, limit int) int {
	return countArrangements(len(p.names), clues, limit)
}

func randomOrderClue(r *rng, n int, place []int) (orderClue, bool) {
	a, b, c := r.intn(n), r.intn(n), r.intn(n)
	cl := orderClue{kind: orderClueKind(r.intn(6)), a: a, b: b, c: c, k: r.intn(n)}
	switch cl.kind {
	case orderGap:
		cl.k = r.between(1, n-2)
	case orderAt:
		if !r.chance(1, 4) {
			return orderClue{}, false
		}
	}
	if cl.kind != orderNotAt && cl.kind != orderAt && a == b || cl.kind == orderBetween && (c == a || c == b) {
		return orderClue{}, false
	}
	return cl, cl.holds(place)
}

func genRanking(r *rng, level int) (problem, bool) {
	n := level + 3
	p := orderPuzzle{names: sample(r, people, n)}
	place := r.perm(n)
	clues, ok := buildClues(r, func() (orderClue, bool) { return randomOrderClue(r, n, place) },
		func(cs []orderClue) int { return p.count(cs, 2) }, 400)
	if !ok {
		return problem{}, false
	}
	p.clues, p.ask = clues, -1
	order := byPlace(p.names, place)
	intro := fmt.Sprintf("%s ran a race. There were no ties. %s", capital(core.List(p.names)), strings.Join(texts(clues, p.text), " "))
	if level == 3 {
		pr := problem{
			question: intro + " What was the finishing order, from first to last? " + askFor("<names, first to last>"),
			answer:   strings.Join(order, ", "), check: orderCheck(p.names, order), spec: p,
		}
		pr.decoys = adjacentSwaps(order)
		return pr, true
	}
	at := r.intn(n)
	who := order[at]
	p.ask = at
	pr := problem{
		question: fmt.Sprintf("%s Who finished %s? %s", intro, placeWords[at], askName),
		answer:   who, check: choiceCheck(p.names, who), spec: p,
	}
	for _, nm := range p.names {
		if nm != who {
			pr.decoys = append(pr.decoys, nm)
		}
	}
	return pr, true
}

// ---- who did it ----

type culpritStatement struct {
	text string
	eval func(culprit int) bool
}

type culpritPuzzle struct {
	names  []string
	says   []culpritStatement
	truths int // how many statements are true
}

// culprits lists the suspects for whom exactly truths statements hold.
func (p culpritPuzzle) culprits() []int {
	var out []int
	for c := range p.names {
		t := 0
		for _, s := range p.says {
			if s.eval(c) {
				t++
			}
		}
		if t == p.truths {
			out = append(out, c)
		}
	}
	return out
}

func culpritSay(r *rng, names []string, i int) culpritStatement {
	n := len(names)
	j := r.intn(n)
	switch r.intn(4) {
	case 0:
		if j == i {
			return culpritStatement{"I did it.", func(c int) bool { return c == i }}
		}
		return culpritStatement{"It was " + names[j] + ".", func(c int) bool { return c == j }}
	case 1:
		if j == i {
			return culpritStatement{"It wasn't me.", func(c int) bool { return c != i }}
		}
		return culpritStatement{"It wasn't " + names[j] + ".", func(c int) bool { return c != j }}
	case 2:
		l := r.intn(n)
		if l == j || j == i || l == i {
			return culpritSay(r, names, i)
		}
		return culpritStatement{fmt.Sprintf("It was %s or %s.", names[j], names[l]),
			func(c int) bool { return c == j || c == l }}
	default:
		if j == i {
			return culpritSay(r, names, i)
		}
		return culpritStatement{fmt.Sprintf("It was neither me nor %s.", names[j]),
			func(c int) bool { return c != i && c != j }}
	}
}

func genCulprit(r *rng, level int) (problem, bool) {
	n := level + 2
	p := culpritPuzzle{names: sample(r, people, n), truths: r.between(1, n-1)}
	if level == 1 {
		p.truths = 1
	}
	var lines []string
	for i := range n {
		s := culpritSay(r, p.names, i)
		p.says = append(p.says, s)
		lines = append(lines, fmt.Sprintf("%s says: \"%s\"", p.names[i], s.text))
	}
	cs := p.culprits()
	if len(cs) != 1 {
		return problem{}, false
	}
	who := p.names[cs[0]]
	truth := "Exactly one of the statements is true."
	if p.truths > 1 {
		truth = fmt.Sprintf("Exactly %s of the statements are true.", numberWord(p.truths))
	}
	q := fmt.Sprintf("A vase was broken, and exactly one of %s broke it. %s %s Who broke the vase? %s",
		core.List(p.names), strings.Join(lines, " "), truth, askName)
	pr := problem{question: q, answer: who, check: choiceCheck(p.names, who), spec: p}
	for _, nm := range p.names {
		if nm != who {
			pr.decoys = append(pr.decoys, nm)
		}
	}
	return pr, true
}

// ---- Latin squares ----

// latinPuzzle is a Latin square with blanks (0): every row and column must
// hold 1..n once. The question asks for the cell (row, col), or for the
// whole row read as a number when col is -1.
type latinPuzzle struct {
	n        int
	givens   [][]int
	row, col int
}

// latinSolve counts the completions of grid, up to limit, filling blanks in
// reading order; it leaves grid as it found it and keeps the first
// completion in first.
func latinSolve(grid [][]int, limit int) (count int, first [][]int) {
	n := len(grid)
	var rec func(cell int)
	rec = func(cell int) {
		if count >= limit {
			return
		}
		if cell == n*n {
			count++
			if first == nil {
				first = make([][]int, n)
				for i := range grid {
					first[i] = append([]int(nil), grid[i]...)
				}
			}
			return
		}
		i, j := cell/n, cell%n
		if grid[i][j] != 0 {
			rec(cell + 1)
			return
		}
		for v := 1; v <= n; v++ {
			ok := true
			for k := range n {
				if grid[i][k] == v || grid[k][j] == v {
					ok = false
					break
				}
			}
			if ok {
				grid[i][j] = v
				rec(cell + 1)
				grid[i][j] = 0
			}
		}
	}
	rec(0)
	return count, first
}

// randomLatin is a Latin square of order n: the cyclic square with its
// rows, columns and symbols permuted by the stream.
func randomLatin(r *rng, n int) [][]int {
	rows, cols, syms := r.perm(n), r.perm(n), r.perm(n)
	out := make([][]int, n)
	for i := range out {
		out[i] = make([]int, n)
		for j := range out[i] {
			out[i][j] = syms[(rows[i]+cols[j])%n] + 1
		}
	}
	return out
}

func (p latinPuzzle) text() string {
	var rows []string
	for i, row := range p.givens {
		cells := make([]string, len(row))
		for j, v := range row {
			cells[j] = "."
			if v != 0 {
				cells[j] = strconv.Itoa(v)
			}
		}
		rows = append(rows, fmt.Sprintf("row %d [%s]", i+1, strings.Join(cells, " ")))
	}
	return strings.Join(rows, "; ")
}

// genLatin: a Latin square with blanks, checked to have one completion;
// the light level asks for one cell, the others for a whole row.
func genLatin(r *rng, level int) (problem, bool) {
	n := 4
	if level == 3 {
		n = 5
	}
	sol := randomLatin(r, n)
	grid := make([][]int, n)
	for i := range sol {
		grid[i] = append([]int(nil), sol[i]...)
	}
	blanks, maxBlanks := 0, map[int]int{1: 7, 2: 16, 3: 25}[level]
	for _, c := range r.perm(n * n) {
		if blanks == maxBlanks {
			break
		}
		i, j := c/n, c%n
		v := grid[i][j]
		grid[i][j] = 0
		if k, _ := latinSolve(grid, 2); k != 1 {
			grid[i][j] = v
			continue
		}
		blanks++
	}
	p := latinPuzzle{n: n, givens: grid, col: -1}
	rowBlanks := func(i int) []int {
		var js []int
		for j := range n {
			if grid[i][j] == 0 {
				js = append(js, j)
			}
		}
		return js
	}
	q := fmt.Sprintf("Complete this %d×%d grid so that every row and every column holds each of the numbers 1 to %d "+
		"exactly once. The grid, row by row with dots for blanks: %s.", n, n, n, p.text())
	var pr problem
	if level == 1 {
		c := r.intn(n * n)
		for grid[c/n][c%n] != 0 {
			c = (c + 1) % (n * n)
		}
		p.row, p.col = c/n, c%n
		var others []int
		for v := 1; v <= n; v++ {
			others = append(others, v)
		}
		pr = intProblem(fmt.Sprintf("%s What number goes in row %d, column %d?", q, p.row+1, p.col+1),
			sol[p.row][p.col], others...)
	} else {
		p.row = -1
		for _, i := range r.perm(n) {
			if len(rowBlanks(i)) >= level && (p.row < 0 || len(rowBlanks(i)) > len(rowBlanks(p.row))) {
				p.row = i
			}
		}
		if p.row < 0 {
			return problem{}, false
		}
		digits := func(row []int) int {
			v := 0
			for _, d := range row {
				v = v*10 + d
			}
			return v
		}
		// Two of the row's blanks swapped, and the row above or below.
		js := rowBlanks(p.row)
		swapped := append([]int(nil), sol[p.row]...)
		swapped[js[0]], swapped[js[1]] = swapped[js[1]], swapped[js[0]]
		pr = intProblem(fmt.Sprintf("%s Give row %d once completed, its %d numbers read left to right as one "+
			"%d-digit number.", q, p.row+1, n, n), digits(sol[p.row]), digits(swapped), digits(sol[(p.row+1)%n]))
	}
	pr.spec = p
	return pr, true
}

// arrangementClue is a clue about an arrangement of n things to n places
// (at[x] is thing x's place): a finishing order, a schedule of slots.
type arrangementClue interface{ holds(at []int) bool }

// countArrangements counts the arrangements of n things every clue
// allows, stopping at limit: the brute-force check that a puzzle has
// exactly one solution.
func countArrangements[C arrangementClue](n int, clues []C, limit int) int {
	found := 0
	for _, at := range permutations(n) {
		ok := true
		for _, cl := range clues {
			if !cl.holds(at) {
				ok = false
				break
			}
		}
		if ok {
			if found++; found >= limit {
				return found
			}
		}
	}
	return found
}

// byPlace lists names by the place each holds: names[x] at at[x].
func byPlace(names []string, at []int) []string {
	out := make([]string, len(names))
	for x, pl := range at {
		out[pl] = names[x]
	}
	return out
}

// texts is each clue's sentence, in order.
func texts[C any](clues []C, text func(C) string) []string {
	out := make([]string, 0, len(clues))
	for _, cl := range clues {
		out = append(out, text(cl))
	}
	return out
}

// adjacentSwaps are an order's near misses, as an answer writes an order:
// the order with one pair of neighbours swapped, for each pair.
func adjacentSwaps(order []string) []string {
	var out []string
	for i := 0; i+1 < len(order); i++ {
		d := append([]string(nil), order...)
		d[i], d[i+1] = d[i+1], d[i]
		out = append(out, strings.Join(d, ", "))
	}
	return out
}
