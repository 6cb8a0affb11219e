package bank

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/conclavehq/conclave/core"
)

// Planning families: shortest routes, project schedules, timetables,
// two-worker schedules, meeting selection, decanting, packing, change
// making and grid paths.

var towns = []string{"Ashby", "Brill", "Corfe", "Dunmow", "Elstow", "Frome", "Goring", "Hythe", "Ixworth", "Jarrow"}

// roadMap is an undirected weighted graph.
type roadMap struct {
	names []string
	edges [][3]int // a, b, length
	s, t  int
}

const inf = 1 << 30

// dijkstra returns distances from s and, per node, the number of shortest
// paths to it and one predecessor on a shortest path. skip names an edge
// (by index) to leave out, or -1.
func (g roadMap) dijkstra(s, skip int) (dist, ways, prev []int) {
	n := len(g.names)
	adj := make([][][2]int, n)
	for i, e := range g.edges {
		if i == skip {
			continue
		}
		adj[e[0]] = append(adj[e[0]], [2]int{e[1], e[2]})
		adj[e[1]] = append(adj[e[1]], [2]int{e[0], e[2]})
	}
	dist, ways, prev = make([]int, n), make([]int, n), make([]int, n)
	done := make([]bool, n)
	for i := range dist {
		dist[i], prev[i] = inf, -1
	}
	dist[s], ways[s] = 0, 1
	for {
		u := -1
		for v := range n {
			if !done[v] && dist[v] < inf && (u < 0 || dist[v] < dist[u]) {
				u = v
			}
		}
		if u < 0 {
			return dist, ways, prev
		}
		done[u] = true
		for _, e := range adj[u] {
			v, w := e[0], e[1]
			switch d := dist[u] + w; {
			case d < dist[v]:
				dist[v], ways[v], prev[v] = d, ways[u], u
			case d == dist[v]:
				ways[v] += ways[u]
			}
		}
	}
}

func (g roadMap) route(prev []int, t int) []string {
	var out []string
	for v := t; v >= 0; v = prev[v] {
		out = append([]string{g.names[v]}, out...)
	}
	return out
}

// randomRoadMap makes a connected graph: a random tree, then extra roads.
func randomRoadMap(r *rng, n, extra, maxLen int) roadMap {
	g := roadMap{names: sample(r, towns, n)}
	has := map[[2]int]bool{}
	add := func(a, b int) {
		if a == b || has[[2]int{min(a, b), max(a, b)}] {
			return
		}
		has[[2]int{min(a, b), max(a, b)}] = true
		g.edges = append(g.edges, [3]int{a, b, r.between(1, maxLen)})
	}
	order := r.perm(n)
	for i := 1; i < n; i++ {
		add(order[i], order[r.intn(i)])
	}
	for range extra * 3 {
		if len(g.edges) >= n-1+extra {
			break
		}
		add(r.intn(n), r.intn(n))
	}
	return g
}

func (g roadMap) describe() string {
	var roads []string
	for _, e := range g.edges {
		roads = append(roads, fmt.Sprintf("%s–%s %d km", g.names[e[0]], g.names[e[1]], e[2]))
	}
	return "Roads run both ways between these towns, with these lengths: " + strings.Join(roads, "; ") +
		". There are no other roads."
}

// hops counts the edges of a route.
func hops(route []string) int { return len(route) - 1 }

func genPathLength(r *rng, level int) (problem, bool) {
	n, extra, maxLen, minHops := 5, 2, 9, 2
	switch level {
	case 2:
		n, extra, maxLen, minHops = 7, 4, 20, 3
	case 3:
		n, extra, maxLen, minHops = 9, 7, 30, 4
	}
	g := randomRoadMap(r, n, extra, maxLen)
	g.s, g.t = r.intn(n), r.intn(n)
	dist, _, prev := g.dijkstra(g.s, -1)
	if g.s == g.t || hops(g.route(prev, g.t)) < minHops {
		return problem{}, false
	}
	want := dist[g.t]
	var decoys []int
	for i := range g.edges {
		if d, _, _ := g.dijkstra(g.s, i); d[g.t] < inf && d[g.t] != want {
			decoys = append(decoys, d[g.t])
		}
	}
	q := fmt.Sprintf("%s What is the length, in km, of the shortest route from %s to %s?", g.describe(),
		g.names[g.s], g.names[g.t])
	p := intProblem(q, want, decoys...)
	p.note = "Shortest route: " + strings.Join(g.route(prev, g.t), " → ") + "."
	p.spec = g
	return p, true
}

func genPathRoute(r *rng, level int) (problem, bool) {
	n, extra, maxLen, minHops := 5, 2, 9, 2
	switch level {
	case 2:
		n, extra, maxLen, minHops = 7, 4, 15, 3
	case 3:
		n, extra, maxLen, minHops = 10, 8, 25, 4
	}
	g := randomRoadMap(r, n, extra, maxLen)
	g.s, g.t = r.intn(n), r.intn(n)
	dist, ways, prev := g.dijkstra(g.s, -1)
	route := g.route(prev, g.t)
	if g.s == g.t || ways[g.t] != 1 || hops(route) < minHops {
		return problem{}, false
	}
	q := fmt.Sprintf("%s Which route from %s to %s is shortest? List the towns in order, starting at %s and ending at %s. %s",
		g.describe(), g.names[g.s], g.names[g.t], g.names[g.s], g.names[g.t], askFor("<town> → <town> → …"))
	p := problem{question: q, answer: strings.Join(route, " → "), check: routeCheck(g.names, route), spec: g,
		note: fmt.Sprintf("Length %d km.", dist[g.t])}
	// Skipping a town is the slip of a reader who misses a road; the best
	// route without each of the shortest route's roads is the near miss.
	skipped := append(append([]string(nil), route[:1]...), route[2:]...)
	p.decoys = append(p.decoys, strings.Join(skipped, " → "))
	seen := map[string]bool{p.answer: true}
	for i := range g.edges {
		if d, _, pv := g.dijkstra(g.s, i); d[g.t] < inf {
			alt := strings.Join(g.route(pv, g.t), " → ")
			if !seen[alt] {
				seen[alt] = true
				p.decoys = append(p.decoys, alt)
			}
		}
	}
	return p, true
}

// ---- project schedules ----

var taskNames = []string{"survey", "permits", "foundations", "framing", "wiring", "plumbing", "roofing", "drywall",
	"painting", "flooring", "landscaping", "inspection"}

// genCriticalPath: the shortest finish of a project with prerequisites and
// as many workers as it needs.
func genCriticalPath(r *rng, level int) (problem, bool) {
	n := 2*level + 2
	names := sample(r, taskNames, n)
	dur := make([]int, n)
	pre := make([][]int, n)
	for i := range n {
		dur[i] = r.between(1, 4+3*level)
		for j := range i {
			if r.chance(2, 2+i) {
				pre[i] = append(pre[i], j)
			}
		}
	}
	finish := make([]int, n)
	total := 0
	for i := range n {
		start := 0
		for _, j := range pre[i] {
			start = max(start, finish[j])
		}
		finish[i] = start + dur[i]
		total += dur[i]
	}
	want, longest := 0, 0
	for i, f := range finish {
		want, longest = max(want, f), max(longest, dur[i])
	}
	if want == total || want == longest {
		return problem{}, false // a chain or no dependencies at all: nothing to plan
	}
	var lines []string
	order := r.perm(n)
	for _, i := range order {
		line := fmt.Sprintf("%s: %s", capital(names[i]), plural(dur[i], "day"))
		if len(pre[i]) > 0 {
			var ps []string
			for _, j := range pre[i] {
				ps = append(ps, names[j])
			}
			line += ", once " + core.List(ps) + " " + doneWord(len(ps))
		}
		lines = append(lines, line+".")
	}
	q := fmt.Sprintf("A building project has these tasks, with their durations and prerequisites. %s Any number of "+
		"tasks can run at the same time once their prerequisites are done, and there are enough workers for all of "+
		"them. What is the least number of days the whole project can take?", strings.Join(lines, " "))
	return intProblem(q, want, total), true
}

func doneWord(n int) string {
	if n == 1 {
		return "is done"
	}
	return "are done"
}

// ---- timetables ----

var reviews = []string{"Kestrel", "Lark", "Merlin", "Nightjar", "Osprey", "Plover"}

type slotClueKind int

const (
	slotBefore slotClueKind = iota
	slotJustAfter
	slotNotAdjacent
	slotNotAt
	slotNoLater
	slotNoEarlier
)

type slotClue struct {
	kind slotClueKind
	a, b int
	s    int
}

// holds reads at[x], the slot of review x.
func (cl slotClue) holds(at []int) bool {
	pa, pb := at[cl.a], at[cl.b]
	switch cl.kind {
	case slotBefore:
		return pa < pb
	case slotJustAfter:
		return pb == pa+1
	case slotNotAdjacent:
		return abs(pa-pb) != 1
	case slotNotAt:
		return pa != cl.s
	case slotNoLater:
		return pa <= cl.s
	default:
		return pa >= cl.s
	}
}

type slotPuzzle struct {
	names []string
	times []string
	clues []slotClue
	ask   int // the slot asked for, or -1 for the whole order
}

func (p slotPuzzle) text(cl slotClue) string {
	a, b := "the "+p.names[cl.a]+" review", "the "+p.names[cl.b]+" review"
	switch cl.kind {
	case slotBefore:
		return capital(a) + " must come before " + b + "."
	case slotJustAfter:
		return capital(b) + " must come directly after " + a + "."
	case slotNotAdjacent:
		return fmt.Sprintf("The %s and %s reviews may not be in consecutive slots.", p.names[cl.a], p.names[cl.b])
	case slotNotAt:
		return capital(a) + " cannot be at " + p.times[cl.s] + "."
	case slotNoLater:
		return capital(a) + " must start no later than " + p.times[cl.s] + "."
	default:
		return capital(a) + " cannot start before " + p.times[cl.s] + "."
	}
}

// count counts the schedules (as slot vectors) the clues allow.
func (p slotPuzzle) count(clues []slotClue, limit int) int {
	return countArrangements(len(p.names), clues, limit)
}

func randomSlotClue(r *rng, n int, at []int) (slotClue, bool) {
	cl := slotClue{kind: slotClueKind(r.intn(6)), a: r.intn(n), b: r.intn(n), s: r.intn(n)}
	if cl.kind <= slotNotAdjacent && cl.a == cl.b ||
		cl.kind == slotNoLater && (cl.s == n-1 || cl.s == 0) || cl.kind == slotNoEarlier && (cl.s == 0 || cl.s == n-1) {
		return slotClue{}, false
	}
	return cl, cl.holds(at)
}

func genSlots(r *rng, level int) (problem, bool) {
	n := level + 3
	p := slotPuzzle{names: sample(r, reviews, n)}
	startHour := r.between(8, 10)
	for i := range n {
		p.times = append(p.times, fmt.Sprintf("%d:00", startHour+i))
	}
	at := r.perm(n)
	clues, ok := buildClues(r, func() (slotClue, bool) { return randomSlotClue(r, n, at) },
		func(cs []slotClue) int { return p.count(cs, 2) }, 400)
	if !ok {
		return problem{}, false
	}
	p.clues, p.ask = clues, -1
	order := byPlace(p.names, at)
	lines := texts(clues, p.text)
	intro := fmt.Sprintf("A committee must hold %s design reviews — %s — in %s one-hour slots starting at %s, %s. "+
		"%s", numberWord(n), core.List(p.names), numberWord(n), core.List(p.times), "one review per slot",
		strings.Join(lines, " "))
	if level == 3 {
		pr := problem{
			question: intro + " In what order must the reviews be held? " + askFor("<reviews, first slot to last>"),
			answer:   strings.Join(order, ", "), check: orderCheck(p.names, order), spec: p,
		}
		pr.decoys = adjacentSwaps(order)
		return pr, true
	}
	s := r.intn(n)
	p.ask = s
	pr := problem{
		question: fmt.Sprintf("%s Which review is at %s? %s", intro, p.times[s], askFor("<review>")),
		answer:   order[s], check: choiceCheck(p.names, order[s]), spec: p,
	}
	for _, nm := range p.names {
		if nm != order[s] {
			pr.decoys = append(pr.decoys, nm)
		}
	}
	return pr, true
}

// ---- two workers ----

var chores = []string{"sanding", "painting", "glazing", "tiling", "welding", "wiring", "plastering", "varnishing",
	"cleaning"}

// genTwoWorkers: the least time two people need for a set of jobs, checked
// over every split of the jobs.
func genTwoWorkers(r *rng, level int) (problem, bool) {
	n := 2*level + 2
	jobs := sample(r, chores, n)
	d := make([]int, n)
	sum := 0
	for i := range d {
		d[i] = r.between(1, 5+5*level)
		sum += d[i]
	}
	fixed, apart := -1, [2]int{-1, -1}
	extra := ""
	if level == 3 {
		fixed = r.intn(n)
		apart = [2]int{r.intn(n), r.intn(n)}
		if apart[0] == apart[1] {
			return problem{}, false
		}
		extra = fmt.Sprintf(" Only %s can do the %s, and the %s and the %s must be done by different people.",
			people[0], jobs[fixed], jobs[apart[0]], jobs[apart[1]])
	}
	best := inf
	for mask := 0; mask < 1<<n; mask++ { // bit set: the job is Ada's
		if fixed >= 0 && mask&(1<<fixed) == 0 {
			continue
		}
		if apart[0] >= 0 && (mask>>apart[0])&1 == (mask>>apart[1])&1 {
			continue
		}
		a := 0
		for i := range n {
			if mask&(1<<i) != 0 {
				a += d[i]
			}
		}
		best = min(best, max(a, sum-a))
	}
	if best == inf {
		return problem{}, false
	}
	// Longest job first, each to whoever is free first: the usual heuristic.
	idx := r.perm(n)
	sort.SliceStable(idx, func(i, j int) bool { return d[idx[i]] > d[idx[j]] })
	var w [2]int
	for _, i := range idx {
		if w[0] <= w[1] {
			w[0] += d[i]
		} else {
			w[1] += d[i]
		}
	}
	var list []string
	for i := range n {
		list = append(list, fmt.Sprintf("%s %s", jobs[i], plural(d[i], "hour")))
	}
	q := fmt.Sprintf("%s and %s share these jobs: %s. Each job is done start to finish by one person, one job at a time, "+
		"and both start at the same moment.%s What is the least number of hours until every job is finished?",
		people[0], people[1], core.List(list), extra)
	return intProblem(q, best, max(w[0], w[1]), (sum+1)/2), true
}

// ---- meeting selection ----

func genIntervals(r *rng, level int) (problem, bool) {
	n := 2*level + 2
	type meeting struct{ start, end, value int }
	ms := make([]meeting, n)
	for i := range ms {
		s := r.between(0, 16)
		ms[i] = meeting{s, s + r.between(1, 4), r.between(2, 10+10*level)}
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].start < ms[j].start })
	best, greedy := 0, 0
	for mask := 0; mask < 1<<n; mask++ {
		v, ok := 0, true
		for i := range n {
			for j := i + 1; j < n && ok; j++ {
				if mask&(1<<i) != 0 && mask&(1<<j) != 0 && ms[i].start < ms[j].end && ms[j].start < ms[i].end {
					ok = false
				}
			}
			if mask&(1<<i) != 0 {
				v += ms[i].value
			}
		}
		if ok {
			best = max(best, v)
		}
	}
	// The tempting greedy: the richest meeting first.
	byValue := r.perm(n)
	sort.SliceStable(byValue, func(i, j int) bool { return ms[byValue[i]].value > ms[byValue[j]].value })
	var taken []meeting
	for _, i := range byValue {
		ok := true
		for _, t := range taken {
			if ms[i].start < t.end && t.start < ms[i].end {
				ok = false
			}
		}
		if ok {
			taken = append(taken, ms[i])
			greedy += ms[i].value
		}
	}
	if greedy == best && level > 1 {
		return problem{}, false
	}
	var list []string
	for i, m := range ms {
		list = append(list, fmt.Sprintf("client %d from %s to %s, worth $%d", i+1, clock(m.start), clock(m.end), m.value*10))
	}
	q := fmt.Sprintf("A consultant can take any of these meetings but cannot be in two at once (one ending exactly when "+
		"another starts is fine): %s. What is the most money, in dollars, she can earn?", strings.Join(list, "; "))
	return intProblem(q, best*10, greedy*10, best*10-10, best*10+10), true
}

// clock writes half-hours after 08:00.
func clock(halfHours int) string {
	return fmt.Sprintf("%d:%s", 8+halfHours/2, []string{"00", "30"}[halfHours%2])
}

// ---- decanting ----

type jugState [3]int

// genJugs: the fewest moves to measure an amount, by breadth-first search.
func genJugs(r *rng, level int) (problem, bool) {
	var caps jugState
	var start jugState
	var q string
	tap := level < 3
	if tap {
		caps = jugState{r.between(2, 5+4*level), r.between(3, 7+4*level), 0}
		if caps[0] == caps[1] {
			return problem{}, false
		}
	} else {
		big := 2 * r.between(4, 8)
		caps = jugState{big, r.between(3, big-2), 0}
		caps[2] = r.between(2, caps[1]-1)
		start = jugState{big, 0, 0}
	}
	target := r.between(1, max(caps[0], caps[1])-1)
	want, ok := jugMoves(caps, start, target, tap)
	if !ok || want < level+1 || want > 4*level+2 || target == caps[0] || target == caps[1] || target == caps[2] {
		return problem{}, false
	}
	if tap {
		q = fmt.Sprintf("You have %s-litre jug and %s-litre jug, both empty, and a tap. A move is filling a jug "+
			"from the tap, emptying a jug onto the ground, or pouring from one jug into the other until the first is empty "+
			"or the second is full. The jugs have no markings. What is the least number of moves after which one jug "+
			"holds exactly %s?", an(strconv.Itoa(caps[0])), an(strconv.Itoa(caps[1])), plural(target, "litre"))
	} else {
		q = fmt.Sprintf("%s-litre jug is full of water; %s-litre jug and %s-litre jug are empty. There is no tap, and "+
			"no water may be thrown away. A move is pouring from one jug into another until the first is empty or the "+
			"second is full. The jugs have no markings. What is the least number of moves after which some jug holds "+
			"exactly %s?", capital(an(strconv.Itoa(caps[0]))), an(strconv.Itoa(caps[1])), an(strconv.Itoa(caps[2])),
			plural(target, "litre"))
	}
	return intProblem(q, want), true
}

func jugMoves(caps, start jugState, target int, tap bool) (int, bool) {
	dist := map[jugState]int{start: 0}
	queue := []jugState{start}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, v := range s {
			if v == target {
				return dist[s], true
			}
		}
		var next []jugState
		for i := range 3 {
			if caps[i] == 0 {
				continue
			}
			if tap {
				f, e := s, s
				f[i], e[i] = caps[i], 0
				next = append(next, f, e)
			}
			for j := range 3 {
				if i == j || caps[j] == 0 {
					continue
				}
				t := s
				amt := min(t[i], caps[j]-t[j])
				t[i] -= amt
				t[j] += amt
				next = append(next, t)
			}
		}
		for _, t := range next {
			if _, seen := dist[t]; !seen {
				dist[t] = dist[s] + 1
				queue = append(queue, t)
			}
		}
	}
	return 0, false
}

// ---- packing ----

var gear = []string{"tent", "stove", "camera", "rope", "water filter", "first-aid kit", "book", "fishing rod", "lantern",
	"hammock"}

// genKnapsack: the most value within a weight limit, over every subset.
func genKnapsack(r *rng, level int) (problem, bool) {
	n := 3*level + 1
	names := sample(r, gear, n)
	w, v := make([]int, n), make([]int, n)
	sumW := 0
	for i := range n {
		w[i], v[i] = r.between(1, 9), r.between(2, 20)
		sumW += w[i]
	}
	capacity := r.between(sumW/3, sumW*2/3)
	best := 0
	for mask := 0; mask < 1<<n; mask++ {
		tw, tv := 0, 0
		for i := range n {
			if mask&(1<<i) != 0 {
				tw += w[i]
				tv += v[i]
			}
		}
		if tw <= capacity {
			best = max(best, tv)
		}
	}
	idx := r.perm(n)
	sort.SliceStable(idx, func(a, b int) bool { return v[idx[a]]*w[idx[b]] > v[idx[b]]*w[idx[a]] })
	greedy, load := 0, 0
	for _, i := range idx {
		if load+w[i] <= capacity {
			load += w[i]
			greedy += v[i]
		}
	}
	if greedy == best && level > 1 {
		return problem{}, false
	}
	var list []string
	for i := range n {
		list = append(list, fmt.Sprintf("%s (%d kg, worth %d points)", names[i], w[i], v[i]))
	}
	q := fmt.Sprintf("A hiker can carry at most %d kg of extra gear and scores each item by how useful it is: %s. Items "+
		"cannot be split. What is the highest total score she can carry?", capacity, core.List(list))
	return intProblem(q, best, greedy), true
}

// genCoinChange: the fewest coins for an amount, and at level 3 the number
// of ways to make it.
func genCoinChange(r *rng, level int) (problem, bool) {
	var coins []int
	switch level {
	case 1:
		coins = []int{1, 2, 5, 10}
	case 2:
		coins = []int{1, r.between(3, 6), r.between(7, 12), r.between(13, 25)}
	default:
		coins = []int{1, r.between(3, 8), r.between(9, 17), r.between(18, 40)}
	}
	amount := r.between(11, 20+40*level)
	minCoins := make([]int, amount+1)
	ways := make([]int, amount+1)
	ways[0] = 1
	for a := 1; a <= amount; a++ {
		minCoins[a] = inf
		for _, c := range coins {
			if c <= a && minCoins[a-c]+1 < minCoins[a] {
				minCoins[a] = minCoins[a-c] + 1
			}
		}
	}
	for _, c := range coins {
		for a := c; a <= amount; a++ {
			ways[a] += ways[a-c]
		}
	}
	greedy, left := 0, amount
	for i := len(coins) - 1; i >= 0; i-- {
		greedy += left / coins[i]
		left %= coins[i]
	}
	var cs []string
	for _, c := range coins {
		cs = append(cs, fmt.Sprintf("%d", c))
	}
	country := fmt.Sprintf("In a country whose coins are worth %s crowns", core.List(cs))
	if level == 3 && r.chance(1, 2) {
		return intProblem(fmt.Sprintf("%s, in how many different ways can exactly %d crowns be paid in coins? The order of "+
			"the coins does not matter.", country, amount), ways[amount], ways[amount-1]), true
	}
	if greedy == minCoins[amount] && level > 1 {
		return problem{}, false // the greedy answer is right: nothing to think about
	}
	return intProblem(fmt.Sprintf("%s, what is the smallest number of coins that pay exactly %d crowns?", country, amount),
		minCoins[amount], greedy), true
}

// genGridPaths: shortest walks on a street grid, some corners closed.
func genGridPaths(r *rng, level int) (problem, bool) {
	w, h := r.between(2, 3+level), r.between(2, 3+level)
	closed := map[[2]int]bool{}
	var list []string
	for range level - 1 + r.intn(level) {
		c := [2]int{r.between(0, w), r.between(0, h)}
		if c == [2]int{0, 0} || c == [2]int{w, h} || closed[c] {
			continue
		}
		closed[c] = true
	}
	keys := make([][2]int, 0, len(closed))
	for c := range closed {
		keys = append(keys, c)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i][0] < keys[j][0] || keys[i][0] == keys[j][0] && keys[i][1] < keys[j][1]
	})
	for _, c := range keys {
		list = append(list, fmt.Sprintf("(%d, %d)", c[0], c[1]))
	}
	paths := make([][]int, w+1)
	for x := range paths {
		paths[x] = make([]int, h+1)
		for y := range paths[x] {
			switch {
			case closed[[2]int{x, y}]:
			case x == 0 && y == 0:
				paths[x][y] = 1
			default:
				if x > 0 {
					paths[x][y] += paths[x-1][y]
				}
				if y > 0 {
					paths[x][y] += paths[x][y-1]
				}
			}
		}
	}
	want := paths[w][h]
	if want == 0 {
		return problem{}, false
	}
	q := fmt.Sprintf("A courier walks on a grid of streets from the corner (0, 0) to the corner (%d, %d), each step one "+
		"block east (x + 1) or one block north (y + 1).", w, h)
	if len(list) > 0 {
		q += " The corners " + core.List(list) + " are closed and cannot be passed through."
		if len(list) == 1 {
			q = strings.Replace(q, "The corners", "The corner", 1)
			q = strings.Replace(q, "are closed", "is closed", 1)
		}
	}
	q += " How many different routes can the courier take?"
	return intProblem(q, want, binom(w+h, w)), true
}

// ---- meeting rooms ----

// roomsPuzzle is a day of meetings, in half-hours after 08:00, that must be
// given rooms; a room needs gap half-hours free between two meetings.
type roomsPuzzle struct {
	start, end []int
	gap        int
}

// clash reports whether meetings i and j cannot share a room.
func (p roomsPuzzle) clash(i, j int) bool {
	return p.start[i] < p.end[j]+p.gap && p.start[j] < p.end[i]+p.gap
}

// rooms is the fewest rooms: the most meetings in use at one moment, each
// holding its room until its gap is over.
func (p roomsPuzzle) rooms() int {
	best := 0
	for t := 0; t <= 40; t++ {
		busy := 0
		for i := range p.start {
			if p.start[i] <= t && t < p.end[i]+p.gap {
				busy++
			}
		}
		best = max(best, busy)
	}
	return best
}

// genRooms: the fewest meeting rooms for a day's bookings; at level 3 a
// room is cleaned for half an hour after each meeting.
func genRooms(r *rng, level int) (problem, bool) {
	n := map[int]int{1: 4, 2: 6, 3: 9}[level]
	p := roomsPuzzle{}
	if level == 3 {
		p.gap = 1
	}
	var list []string
	for i := range n {
		s := r.between(0, 16)
		e := s + r.between(1, 2+level)
		p.start, p.end = append(p.start, s), append(p.end, e)
		list = append(list, fmt.Sprintf("%s from %s to %s", taskTitles[i], clock(s), clock(e)))
	}
	want := p.rooms()
	// The slip of counting every meeting that clashes with the busiest one.
	most := 0
	for i := range n {
		k := 1
		for j := range n {
			if j != i && p.clash(i, j) {
				k++
			}
		}
		most = max(most, k)
	}
	decoys := []int{most}
	if level == 3 {
		decoys = append(decoys, roomsPuzzle{start: p.start, end: p.end}.rooms())
	}
	if want < 2 || level > 1 && most == want || level == 3 && decoys[1] == want {
		return problem{}, false
	}
	rule := "A meeting may start in a room at the moment the previous one there ends."
	if p.gap > 0 {
		rule = "After each meeting its room is cleaned for 30 minutes before the next meeting may start in it."
	}
	q := fmt.Sprintf("These meetings are booked for one day: %s. Each meeting needs a room of its own for its whole length. "+
		"%s What is the fewest rooms that can hold all the meetings?", strings.Join(list, "; "), rule)
	pr := intProblem(q, want, decoys...)
	pr.spec = p
	return pr, true
}

// taskTitles name the meetings.
var taskTitles = []string{"budget review", "design review", "hiring panel", "sales call", "stand-up", "training",
	"board briefing", "vendor demo", "retrospective"}

// ---- round trips ----

// tourPuzzle is a complete road table between towns; a round trip starts
// and ends at town 0 and visits every other town once.
type tourPuzzle struct {
	names []string
	dist  [][]int
}

func (p tourPuzzle) length(order []int) int {
	total, at := 0, 0
	for _, v := range order {
		total += p.dist[at][v+1]
		at = v + 1
	}
	return total + p.dist[at][0]
}

// genRoundTrip: the shortest round trip through every town of a complete
// road table, over every order of the towns.
func genRoundTrip(r *rng, level int) (problem, bool) {
	n := level + 3
	p := tourPuzzle{names: sample(r, towns, n), dist: make([][]int, n)}
	for i := range p.dist {
		p.dist[i] = make([]int, n)
	}
	var roads []string
	for i := range n {
		for j := i + 1; j < n; j++ {
			d := r.between(5, 10+10*level)
			p.dist[i][j], p.dist[j][i] = d, d
			roads = append(roads, fmt.Sprintf("%s–%s %d km", p.names[i], p.names[j], d))
		}
	}
	var lengths []int
	for _, order := range permutations(n - 1) {
		lengths = append(lengths, p.length(order))
	}
	sort.Ints(lengths)
	best, second := lengths[0], lengths[0]
	for _, l := range lengths {
		if l > best {
			second = l
			break
		}
	}
	// Nearest neighbour: always on to the closest town not yet visited.
	var greedy []int
	seen := map[int]bool{0: true}
	for at := 0; len(greedy) < n-1; {
		next := -1
		for v := 1; v < n; v++ {
			if !seen[v] && (next < 0 || p.dist[at][v] < p.dist[at][next]) {
				next = v
			}
		}
		seen[next] = true
		greedy = append(greedy, next-1)
		at = next
	}
	nearest := p.length(greedy)
	if level > 1 && nearest == best {
		return problem{}, false
	}
	q := fmt.Sprintf("A courier starts in %s, must visit each of %s once, and returns to %s. Every pair of these towns is "+
		"joined by one road, of these lengths: %s. What is the length, in km, of the shortest such round trip?",
		p.names[0], core.List(p.names[1:]), p.names[0], strings.Join(roads, "; "))
	pr := intProblem(q, best, nearest, second)
	pr.spec = p
	return pr, true
}
