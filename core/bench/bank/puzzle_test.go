package bank

import (
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The tests re-solve every puzzle and graph of the pool by brute force,
// written apart from the generators' solvers: full enumeration where the
// generator prunes, Floyd–Warshall where it runs Dijkstra.

// heapPerms lists the permutations of 0..n-1 by Heap's algorithm, a
// different order and a different method from the generators' list.
func heapPerms(n int) [][]int {
	a := make([]int, n)
	for i := range a {
		a[i] = i
	}
	out := [][]int{append([]int(nil), a...)}
	c := make([]int, n)
	for i := 0; i < n; {
		if c[i] < i {
			if i%2 == 0 {
				a[0], a[i] = a[i], a[0]
			} else {
				a[c[i]], a[i] = a[i], a[c[i]]
			}
			out = append(out, append([]int(nil), a...))
			c[i]++
			i = 0
		} else {
			c[i] = 0
			i++
		}
	}
	return out
}

func TestHeapPermsAreAllPermutations(t *testing.T) {
	t.Parallel()
	for n, want := range []int{1, 1, 2, 6, 24, 120, 720} {
		seen := map[string]bool{}
		for _, p := range heapPerms(n) {
			key := make([]byte, n)
			used := make([]bool, n)
			for i, x := range p {
				require.False(t, used[x], "repeat in %v", p)
				used[x], key[i] = true, byte('0'+x)
			}
			seen[string(key)] = true
		}
		require.Len(t, seen, want, "n=%d", n)
	}
}

// gridSolutions enumerates every assignment of every category, with no
// pruning, and counts those that satisfy all clues; it returns the person
// the question asks for in the last one found.
func gridSolutions(g gridPuzzle) (int, string) {
	perms := heapPerms(g.n)
	k := len(g.cats)
	idx := make([]int, k)
	pos := make([][]int, k)
	count, who := 0, ""
	for {
		for c := range k {
			pos[c] = perms[idx[c]]
		}
		ok := true
		for _, cl := range g.clues {
			if !cl.holds(pos) {
				ok = false
				break
			}
		}
		if ok {
			count++
			house := pos[g.ask[0]][g.ask[1]]
			for v, h := range pos[0] {
				if h == house {
					who = g.cats[0].values[v]
				}
			}
		}
		c := 0
		for c < k {
			idx[c]++
			if idx[c] < len(perms) {
				break
			}
			idx[c] = 0
			c++
		}
		if c == k {
			return count, who
		}
	}
}

func floyd(g roadMap) [][]int {
	n := len(g.names)
	d := make([][]int, n)
	for i := range d {
		d[i] = make([]int, n)
		for j := range d[i] {
			if i != j {
				d[i][j] = inf
			}
		}
	}
	for _, e := range g.edges {
		d[e[0]][e[1]] = min(d[e[0]][e[1]], e[2])
		d[e[1]][e[0]] = min(d[e[1]][e[0]], e[2])
	}
	for k := range n {
		for i := range n {
			for j := range n {
				if d[i][k]+d[k][j] < d[i][j] {
					d[i][j] = d[i][k] + d[k][j]
				}
			}
		}
	}
	return d
}

// shortestRoutes counts the simple paths from s to t of length want, by
// depth-first search over every simple path.
func shortestRoutes(g roadMap, want int) int {
	n := len(g.names)
	w := make([][]int, n)
	for i := range w {
		w[i] = make([]int, n)
	}
	for _, e := range g.edges {
		w[e[0]][e[1]], w[e[1]][e[0]] = e[2], e[2]
	}
	seen := make([]bool, n)
	count := 0
	var walk func(v, length int)
	walk = func(v, length int) {
		if length > want {
			return
		}
		if v == g.t {
			if length == want {
				count++
			}
			return
		}
		seen[v] = true
		for u := range n {
			if w[v][u] > 0 && !seen[u] {
				walk(u, length+w[v][u])
			}
		}
		seen[v] = false
	}
	walk(g.s, 0)
	return count
}

// answerOfOrder is the reference answer for a solved ordering: the name in
// place ask, or every name in order when ask is -1.
func answerOfOrder(names []string, place []int, ask int) string {
	order := make([]string, len(names))
	for x, p := range place {
		order[p] = names[x]
	}
	if ask < 0 {
		return strings.Join(order, ", ")
	}
	return order[ask]
}

func TestEveryPuzzleHasExactlyOneSolution(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	checked := map[string]int{}
	for _, b := range Buckets {
		for _, it := range tb.pool[b] {
			switch p := it.spec.(type) {
			case knightsPuzzle:
				require.Len(t, p.solutions(), 1, it.ID)
				// The reference makes every knight's statement true and
				// every knave's false.
				k := make([]bool, len(p.names))
				for i, n := range p.names {
					k[i] = strings.Contains(strings.SplitN(it.Answer, "Knaves:", 2)[0], n)
				}
				for i, s := range p.says {
					require.Equal(t, k[i], s.eval(k), "%s: %s", it.ID, s.text)
				}
			case gridPuzzle:
				n, who := gridSolutions(p)
				require.Equal(t, 1, n, it.ID)
				require.Equal(t, who, it.Answer, it.ID)
			case orderPuzzle:
				n := 0
				for _, place := range heapPerms(len(p.names)) {
					ok := true
					for _, cl := range p.clues {
						ok = ok && cl.holds(place)
					}
					if ok {
						n++
						require.Equal(t, answerOfOrder(p.names, place, p.ask), it.Answer, it.ID)
					}
				}
				require.Equal(t, 1, n, it.ID)
			case slotPuzzle:
				n := 0
				for _, at := range heapPerms(len(p.names)) {
					ok := true
					for _, cl := range p.clues {
						ok = ok && cl.holds(at)
					}
					if ok {
						n++
						require.Equal(t, answerOfOrder(p.names, at, p.ask), it.Answer, it.ID)
					}
				}
				require.Equal(t, 1, n, it.ID)
			case culpritPuzzle:
				n := 0
				for c := range p.names {
					truths := 0
					for _, s := range p.says {
						if s.eval(c) {
							truths++
						}
					}
					if truths == p.truths {
						n++
						require.Equal(t, p.names[c], it.Answer, it.ID)
					}
				}
				require.Equal(t, 1, n, it.ID)
			case roadMap:
				d := floyd(p)[p.s][p.t]
				if it.Family == "path-route" {
					require.Equal(t, 1, shortestRoutes(p, d), "%s: the shortest route must be unique", it.ID)
					stops := strings.Split(it.Answer, " → ")
					require.Equal(t, p.names[p.s], stops[0], it.ID)
					require.Equal(t, p.names[p.t], stops[len(stops)-1], it.ID)
				} else {
					require.Equal(t, strconv.Itoa(d), it.Answer, it.ID)
				}
			case latinPuzzle:
				n, row := latinCompletions(p)
				require.Equal(t, 1, n, it.ID)
				want := 0
				for j, v := range row {
					if p.col < 0 || j == p.col {
						want = want*10 + v
					}
				}
				require.Equal(t, strconv.Itoa(want), it.Answer, it.ID)
			case roomsPuzzle:
				k, _ := strconv.Atoi(it.Answer)
				require.True(t, roomsFit(p, k), "%s: %d rooms do not hold the meetings", it.ID, k)
				require.False(t, roomsFit(p, k-1), "%s: %d rooms already hold the meetings", it.ID, k-1)
			case tourPuzzle:
				require.Equal(t, strconv.Itoa(shortestTour(p)), it.Answer, it.ID)
			default:
				continue
			}
			checked[it.Family]++
		}
	}
	for _, f := range []string{"knights", "logic-grid", "race-order", "timetable", "culprit", "path-length", "path-route",
		"latin-square", "rooms", "round-trip"} {
		require.Equal(t, 3*PerFamily, checked[f], "family %s", f)
	}
}

// latinSquares lists every Latin square of order n (symbols 1..n), row by
// row from every permutation, keeping a row only when no column repeats.
func latinSquares(n int) [][][]int {
	perms := heapPerms(n)
	var out [][][]int
	rows := make([][]int, 0, n)
	var rec func()
	rec = func() {
		if len(rows) == n {
			sq := make([][]int, n)
			for i, r := range rows {
				sq[i] = make([]int, n)
				for j, v := range r {
					sq[i][j] = v + 1
				}
			}
			out = append(out, sq)
			return
		}
		for _, p := range perms {
			ok := true
			for _, r := range rows {
				for j := range n {
					ok = ok && r[j] != p[j]
				}
			}
			if ok {
				rows = append(rows, p)
				rec()
				rows = rows[:len(rows)-1]
			}
		}
	}
	rec()
	return out
}

// latinByOrder lists the squares of orders 4 and 5 once, on first use.
var latinByOrder = sync.OnceValue(func() map[int][][][]int {
	return map[int][][][]int{4: latinSquares(4), 5: latinSquares(5)}
})

func TestLatinSquaresAreCounted(t *testing.T) {
	t.Parallel()
	require.Len(t, latinByOrder()[4], 576)
	require.Len(t, latinByOrder()[5], 161280)
}

// latinCompletions counts the Latin squares that agree with every given,
// and returns the asked row of the last one.
func latinCompletions(p latinPuzzle) (int, []int) {
	count := 0
	var row []int
	for _, sq := range latinByOrder()[p.n] {
		ok := true
		for i := range p.n {
			for j := range p.n {
				ok = ok && (p.givens[i][j] == 0 || p.givens[i][j] == sq[i][j])
			}
		}
		if ok {
			count++
			row = sq[p.row]
		}
	}
	return count, row
}

// roomsFit tries every assignment of the meetings to k rooms.
func roomsFit(p roomsPuzzle, k int) bool {
	n := len(p.start)
	if k <= 0 {
		return n == 0
	}
	room := make([]int, n)
	for {
		ok := true
		for i := 0; i < n && ok; i++ {
			for j := i + 1; j < n && ok; j++ {
				overlap := p.start[i] < p.end[j]+p.gap && p.start[j] < p.end[i]+p.gap
				ok = !(room[i] == room[j] && overlap)
			}
		}
		if ok {
			return true
		}
		i := 0
		for i < n {
			room[i]++
			if room[i] < k {
				break
			}
			room[i] = 0
			i++
		}
		if i == n {
			return false
		}
	}
}

// shortestTour tries every order of every town, the start included, and
// keeps the orders that begin at town 0.
func shortestTour(p tourPuzzle) int {
	best := inf
	for _, order := range heapPerms(len(p.names)) {
		if order[0] != 0 {
			continue
		}
		total := 0
		for i := range order {
			total += p.dist[order[i]][order[(i+1)%len(order)]]
		}
		best = min(best, total)
	}
	return best
}
