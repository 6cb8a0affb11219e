package bank

import (
	"fmt"
	"math/big"
)

// Templated word problems: work rates, travel, mixtures, ages and coins.
// Each generator chooses the unknown first and builds the givens from it,
// so the answer is exact by construction.

// genRateWork: people or pipes sharing work.
func genRateWork(r *rng, level int) (problem, bool) {
	switch level {
	case 1:
		w1, w2, want := r.between(2, 8), r.between(2, 10), r.between(2, 15)
		if w1 == w2 || w2*want%w1 != 0 || w2*want/w1 > 40 {
			return problem{}, false
		}
		d1 := w2 * want / w1
		return intProblem(fmt.Sprintf("%d painters take %d days to paint a school. Working at the same rate, how many days "+
			"would %d painters take?", w1, d1, w2), want, d1*w2/w1), true
	case 2:
		a, b := r.between(6, 60), r.between(6, 60)
		if a == b || a*b%(a+b) != 0 {
			return problem{}, false
		}
		return intProblem(fmt.Sprintf("One tap fills a bath in %d minutes and another fills it in %d minutes. How many "+
			"minutes do both taps together take to fill the empty bath?", a, b), a*b/(a+b), (a+b)/2), true
	default:
		a, b, c := r.between(2, 12), r.between(2, 12), r.between(3, 20)
		// hours for a full tank: 1/(1/a + 1/b − 1/c) = abc/(bc + ac − ab)
		den := b*c + a*c - a*b
		if den <= 0 || a*b*c*60%den != 0 || a == b {
			return problem{}, false
		}
		want := a * b * c * 60 / den
		naive := 60 * a * b / (a + b)
		return intProblem(fmt.Sprintf("Pipe A fills a tank in %d hours and pipe B fills it in %d hours; a drain empties the "+
			"full tank in %d hours. With the tank empty, both pipes and the drain are opened at once. How many minutes does "+
			"the tank take to fill?", a, b, c), want, naive), true
	}
}

// genRateTravel: distance, speed and time.
func genRateTravel(r *rng, level int) (problem, bool) {
	switch level {
	case 1:
		mins := pick(r, []int{15, 20, 30, 40, 45})
		speed := r.between(3, 10) * 4
		if speed*mins%60 != 0 {
			return problem{}, false
		}
		h := r.between(1, 3)
		want := speed*h + speed*mins/60
		return intProblem(fmt.Sprintf("A cyclist rides at a steady %d km/h for %s and %d minutes. How many kilometres "+
			"does she cover?", speed, plural(h, "hour"), mins), want, speed*h+speed*mins/100), true
	case 2:
		v1, v2 := r.between(40, 120), r.between(40, 120)
		dist := r.between(100, 600)
		if dist*60%(v1+v2) != 0 {
			return problem{}, false
		}
		want := dist * 60 / (v1 + v2)
		return intProblem(fmt.Sprintf("Two towns are %d km apart. At noon a train leaves each town for the other, one at "+
			"%d km/h and the other at %d km/h. How many minutes after noon do they pass each other?", dist, v1, v2),
			want, dist*60/max(v1, v2)), true
	default:
		if r.chance(1, 2) {
			v1 := r.between(30, 80)
			v2 := v1 + r.between(5, 40)
			lag := r.between(10, 90)
			if v1*lag%(v2-v1) != 0 {
				return problem{}, false
			}
			want := v1 * lag / (v2 - v1)
			return intProblem(fmt.Sprintf("A van leaves a depot at %d km/h. %d minutes later a car leaves the same depot on the "+
				"same road at %d km/h. How many minutes after it sets off does the car catch the van?", v1, lag, v2),
				want, want+lag), true
		}
		v1, v2 := r.between(20, 90), r.between(20, 90)
		if v1 == v2 {
			return problem{}, false
		}
		return decimalProblem(fmt.Sprintf("A driver goes from A to B at %d km/h and comes straight back along the same road "+
			"at %d km/h. What is the average speed for the round trip, in km/h? Round to two decimal places.", v1, v2),
			frac(2*v1*v2, v1+v2), 2, frac(v1+v2, 2))
	}
}

// genMixture: blends and dilutions.
func genMixture(r *rng, level int) (problem, bool) {
	switch level {
	case 1:
		k1, k2 := r.between(1, 9), r.between(1, 9)
		p1, p2 := r.between(4, 15), r.between(4, 20)
		if p1 == p2 {
			return problem{}, false
		}
		return decimalProblem(fmt.Sprintf("A grocer mixes %d kg of nuts costing $%d per kg with %d kg of nuts costing $%d "+
			"per kg. What does the mixture cost per kg, in dollars? Round to the cent.", k1, p1, k2, p2),
			frac(k1*p1+k2*p2, k1+k2), 2, frac(p1+p2, 2))
	case 2:
		x := r.between(2, 20) * 5
		a, b := r.between(5, 40), r.between(45, 90)
		c := r.between(a+1, b-1)
		if x*(c-a)%(b-c) != 0 {
			return problem{}, false
		}
		want := x * (c - a) / (b - c)
		return intProblem(fmt.Sprintf("How many litres of %s acid solution must be added to %d litres of %s acid "+
			"solution to make %s solution?", an(fmt.Sprintf("%d%%", b)), x, an(fmt.Sprintf("%d%%", a)),
			an(fmt.Sprintf("%d%%", c))), want, x*(c-a)/b), true
	default:
		if r.chance(1, 2) {
			v := r.between(10, 80) * 5
			c1 := r.between(20, 70)
			c2 := r.between(c1+5, 95)
			// drain d litres, refill with pure concentrate: c1(v−d) + 100d = c2·v
			if v*(c2-c1)%(100-c1) != 0 {
				return problem{}, false
			}
			want := v * (c2 - c1) / (100 - c1)
			return intProblem(fmt.Sprintf("A %d-litre radiator is full of a mixture that is %d%% antifreeze. How many litres "+
				"must be drained and replaced with pure antifreeze to bring it to %d%%?", v, c1, c2),
				want, v*(c2-c1)/100), true
		}
		v := r.between(10, 60) * 10
		x := r.between(5, v/4)
		c := r.between(20, 90)
		keep := frac(v-x, v)
		want := ratMul(ratMul(rat(c), keep), keep)
		return decimalProblem(fmt.Sprintf("A vat holds %d litres of juice that is %d%% fruit. Twice in succession, %d litres "+
			"are drawn off and replaced with water, stirring well each time. What percentage of the vat is now fruit? "+
			"Round to two decimal places.", v, c, x), want, 2, ratMul(rat(c), frac(v-2*x, v)))
	}
}

// genAges: ages from sums, differences and ratios.
func genAges(r *rng, level int) (problem, bool) {
	a, b := people[r.intn(5)], people[5+r.intn(5)]
	switch level {
	case 1:
		y := r.between(3, 40)
		x := y + r.between(2, 30)
		return intProblem(fmt.Sprintf("%s and %s's ages add up to %d. %s is %d years older than %s. How old is %s?",
			a, b, x+y, a, x-y, b, a), x, y), true
	case 2:
		k, m := r.between(3, 6), r.between(2, 4)
		if k <= m {
			return problem{}, false
		}
		by := r.between(2, 15)
		if by*(k-m)%(m-1) != 0 {
			return problem{}, false
		}
		n := by * (k - m) / (m - 1)
		ay := k * by
		return intProblem(fmt.Sprintf("%s is %s as old as %s. In %d years %s will be %s as old as %s. How old "+
			"is %s now?", a, times(k), b, n, a, times(m), b, a), ay, by), true
	default:
		if r.chance(1, 2) {
			k := r.between(2, 4)
			by := (k + 1) * r.between(2, 12)
			ay := 2 * k * by / (k + 1)
			return intProblem(fmt.Sprintf("%s is now %s as old as %s was when %s was as old as %s is now. Their present "+
				"ages add up to %d. How old is %s now?", a, times(k), b, a, b, ay+by, a), ay, by), true
		}
		c := people[r.intn(5)+5]
		if c == b {
			return problem{}, false
		}
		cy := r.between(3, 20)
		k, d, n := r.between(2, 4), r.between(2, 12), r.between(2, 10)
		ay, by := k*cy, cy+d
		sum := ay + by + cy + 3*n
		return intProblem(fmt.Sprintf("%s is %s as old as %s, and %s is %d years older than %s. In %d years their "+
			"three ages will add up to %d. How old is %s now?", a, times(k), c, b, d, c, n, sum, b), by, by+n, cy), true
	}
}

// genCoins: counts of coins from their number and value; the three-coin
// version is checked unique by trying every split.
func genCoins(r *rng, level int) (problem, bool) {
	name := pick(r, people)
	switch level {
	case 1, 2:
		v1, v2 := 5, 10
		if level == 2 {
			v1, v2 = pick(r, []int{10, 20}), pick(r, []int{25, 50})
		}
		x, y := r.between(2, 6*level+4), r.between(2, 6*level+4)
		return intProblem(fmt.Sprintf("%s has %d coins, all worth %d cents or %d cents. Together they are worth %d cents. "+
			"How many %d-cent coins does %s have?", name, x+y, v1, v2, x*v1+y*v2, v2, name), y, x), true
	default:
		x, y, z := r.between(2, 15), r.between(2, 15), r.between(2, 15)
		total := x*10 + y*20 + z*50
		extra := r.intn(3)
		clue := []string{
			fmt.Sprintf("there are %d more 20-cent coins than 50-cent coins", y-z),
			fmt.Sprintf("there are %d fewer 10-cent coins than 20-cent coins", y-x),
			fmt.Sprintf("the 10-cent and 50-cent coins number %d together", x+z),
		}[extra]
		holds := func(a, b, c int) bool {
			return []bool{b-c == y-z, b-a == y-x, a+c == x+z}[extra]
		}
		if extra == 0 && y <= z || extra == 1 && y <= x {
			return problem{}, false
		}
		solutions := 0
		for a := 0; a <= x+y+z; a++ {
			for b := 0; a+b <= x+y+z; b++ {
				c := x + y + z - a - b
				if a*10+b*20+c*50 == total && holds(a, b, c) {
					solutions++
				}
			}
		}
		if solutions != 1 {
			return problem{}, false
		}
		return intProblem(fmt.Sprintf("%s has %d coins of 10, 20 and 50 cents, worth %s in all, and %s. How many 50-cent "+
			"coins are there?", name, x+y+z, money(total), clue), z, y, x), true
	}
}

// times writes a multiple the way a word problem says it: "twice", "three
// times".
func times(k int) string {
	if k == 2 {
		return "twice"
	}
	return numberWord(k) + " times"
}

// ceilDiv is the least whole number at or above a/b, for positive a and b.
func ceilDiv(a, b int) int { return (a + b - 1) / b }

// ceilRat is the least whole number at or above v.
func ceilRat(v *big.Rat) int {
	q := new(big.Int).Quo(v.Num(), v.Denom()) // truncates toward zero
	if v.Sign() > 0 && !v.IsInt() {
		q.Add(q, big.NewInt(1))
	}
	return int(q.Int64())
}

// genPaintTins: how much paint to buy for walls, with openings, coats and
// tin sizes; at level 3 the cheapest mix of two tin sizes.
func genPaintTins(r *rng, level int) (problem, bool) {
	switch level {
	case 1:
		w, h, c := r.between(3, 12), r.between(2, 3), r.between(5, 12)
		if w*h%c == 0 {
			return problem{}, false
		}
		return intProblem(fmt.Sprintf("A wall is %d m wide and %d m high. One litre of paint covers %d m², and paint is sold "+
			"in 1-litre tins. How many tins are needed for one coat?", w, h, c), ceilDiv(w*h, c), w*h/c), true
	case 2:
		l, w := r.between(3, 8), r.between(3, 6)
		h := frac(r.between(24, 30), 10)
		win := r.between(2, 5)
		c := r.between(8, 14)
		walls := ratMul(rat(2*(l+w)), h)
		area := ratSub(walls, rat(2+win)) // a 2 m² door and the window
		litres := ratQuo(ratMul(area, rat(2)), rat(c))
		tins := ratQuo(litres, frac(5, 2))
		if tins.IsInt() {
			return problem{}, false
		}
		oneCoat := ceilRat(ratQuo(ratQuo(area, rat(c)), frac(5, 2)))
		noOpenings := ceilRat(ratQuo(ratQuo(ratMul(walls, rat(2)), rat(c)), frac(5, 2)))
		floor := ceilRat(tins) - 1
		return intProblem(fmt.Sprintf("A room is %d m long and %d m wide, and its walls are %s m high. The walls have a door "+
			"of 2 m² and a window of %d m², which are not painted. The walls get two coats; one litre of paint covers %d m² "+
			"per coat, and paint comes in 2.5-litre tins. How many tins are needed?", l, w, number(h, 1), win, c),
			ceilRat(tins), oneCoat, noOpenings, floor), true
	default:
		l, w := r.between(3, 8), r.between(3, 6)
		h := frac(r.between(24, 30), 10)
		c := r.between(8, 14)
		area := ratAdd(ratMul(rat(2*(l+w)), h), rat(l*w)) // walls and ceiling
		need := ratQuo(ratMul(area, rat(2)), rat(c))      // litres
		big5, small := r.between(25, 45)*100, r.between(7, 12)*100
		if big5 >= 5*small || need.IsInt() {
			return problem{}, false
		}
		best := -1
		for k := 0; k <= ceilRat(ratQuo(need, rat(5))); k++ {
			rest := ratSub(need, rat(5*k))
			ones := 0
			if rest.Sign() > 0 {
				ones = ceilRat(rest)
			}
			if cost := k*big5 + ones*small; best < 0 || cost < best {
				best = cost
			}
		}
		allBig := ceilRat(ratQuo(need, rat(5))) * big5
		allSmall := ceilRat(need) * small
		exact := ratMul(need, frac(big5, 5))
		exactCents := int(new(big.Int).Quo(exact.Num(), exact.Denom()).Int64())
		return moneyProblem(fmt.Sprintf("A room is %d m long and %d m wide, with walls %s m high. Its four walls and its "+
			"ceiling get two coats of paint (ignore the door and window). One litre covers %d m² per coat. Paint comes in "+
			"5-litre tins at %s and 1-litre tins at %s. What is the least it can cost to buy enough paint?",
			l, w, number(h, 1), c, money(big5), money(small)), best, allBig, allSmall, exactCents), true
	}
}

// genBreakEven: how many units cover fixed costs, then a profit target,
// then a profit target after a platform's fees.
func genBreakEven(r *rng, level int) (problem, bool) {
	name := pick(r, people)
	switch level {
	case 1:
		f, c := r.between(20, 200)*10, r.between(2, 20)
		p := c + r.between(3, 15)
		if f%(p-c) == 0 {
			return problem{}, false
		}
		return intProblem(fmt.Sprintf("%s pays $%s to rent a market stall for the season. Each candle costs $%d to make and "+
			"sells for $%d. How many candles must be sold to cover the rent?", name, commas(f), c, p),
			ceilDiv(f, p-c), f/(p-c), ceilDiv(f, p)), true
	case 2:
		f, c := r.between(50, 500)*10, r.between(5, 40)
		p := c + r.between(4, 25)
		t := r.between(10, 100) * 50
		if (f+t)%(p-c) == 0 {
			return problem{}, false
		}
		return intProblem(fmt.Sprintf("A workshop spends $%s a month on rent and tools. Each chair costs $%d in wood and "+
			"sells for $%d. How many chairs must it sell in a month to make a profit of at least $%s?",
			commas(f), c, p, commas(t)), ceilDiv(f+t, p-c), ceilDiv(t, p-c), ceilDiv(f, p-c), ceilDiv(f+t, p)), true
	default:
		f := r.between(20, 300) * 10
		c := r.between(200, 3000)                       // cents
		price := c + r.between(300, 3000)               // cents
		pct, fee := r.between(3, 15), r.between(20, 90) // per cent of the price, cents per sale
		t := r.between(10, 200) * 50
		margin := ratSub(ratSub(rat(price), ratMul(rat(price), frac(pct, 100))), rat(fee+c)) // cents
		if margin.Sign() <= 0 {
			return problem{}, false
		}
		goal := rat((f + t) * 100)
		if ratQuo(goal, margin).IsInt() {
			return problem{}, false
		}
		noPct := ceilRat(ratQuo(goal, ratSub(rat(price), rat(fee+c))))
		noFee := ceilRat(ratQuo(goal, ratSub(ratSub(rat(price), ratMul(rat(price), frac(pct, 100))), rat(c))))
		return intProblem(fmt.Sprintf("%s sells prints online. Each print costs %s to make and sells for %s; the platform "+
			"keeps %d%% of each sale's price plus %s per sale. The fixed costs are $%s a month. How many prints must be "+
			"sold in a month to make a profit of at least $%s?", name, money(c), money(price), pct, money(fee), commas(f),
			commas(t)), ceilRat(ratQuo(goal, margin)), noPct, noFee), true
	}
}
