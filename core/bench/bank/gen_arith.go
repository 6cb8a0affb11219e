package bank

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/conclavehq/conclave/core"
)

// Arithmetic families: multi-step sums, money, percentages, interest,
// counting, probability, clock angles, number bases, common multiples and
// modular powers.

// genArithExpr: evaluate an expression with the usual precedence.
func genArithExpr(r *rng, level int) (problem, bool) {
	switch level {
	case 1:
		a, b, c, d := r.between(2, 30), r.between(2, 9), r.between(2, 9), r.between(1, 20)
		want := a + b*c - d
		return intProblem(fmt.Sprintf("Work out %d + %d × %d − %d.", a, b, c, d), want, (a+b)*c-d), true
	case 2:
		switch r.intn(3) {
		case 0:
			e := r.between(2, 9)
			a, b, c, d := r.between(20, 90), r.between(2, 19), r.between(3, 12), e*r.between(3, 15)
			want := (a-b)*c + d/e
			return intProblem(fmt.Sprintf("Evaluate (%d − %d) × %d + %d ÷ %d.", a, b, c, d, e), want, ((a-b)*c+d)/e), true
		case 1:
			a, b, c, d, e := r.between(3, 15), r.between(10, 60), r.between(5, 40), r.between(2, 12), r.between(2, 12)
			want := a*(b+c) - d*e
			return intProblem(fmt.Sprintf("Evaluate %d × (%d + %d) − %d × %d.", a, b, c, d, e), want, (a*(b+c)-d)*e), true
		default:
			a, b, c := r.between(100, 400), r.between(12, 30), r.between(3, 9)
			d := r.between(2, 6)
			want := a - b*c + d*d*d
			return intProblem(fmt.Sprintf("Evaluate %d − %d × %d + %d³.", a, b, c, d), want, (a-b)*c+d*d*d, a-b*c+3*d), true
		}
	default:
		switch r.intn(2) {
		case 0:
			a, b, d := r.between(12, 60), r.between(12, 60), r.between(3, 17)
			q := r.between(2, a*b/d)
			c := a*b - q*d
			e, f, g := r.between(-40, 40), r.between(3, 19), r.between(50, 900)
			want := (q+e)*f - g
			if c <= 0 || e == 0 {
				return problem{}, false
			}
			return intProblem(fmt.Sprintf("Evaluate ((%d × %d − %d) ÷ %d + (%d)) × %d − %d.", a, b, c, d, e, f, g),
				want, (q-e)*f-g, (q+e)*(f-g)), true
		default:
			a, b, c, d := r.between(200, 999), r.between(11, 49), r.between(-30, -2), r.between(5, 25)
			f := r.between(2, 9)
			e := f * r.between(4, 30)
			want := a - b*(c-d) + e*e/f
			return intProblem(fmt.Sprintf("Evaluate %d − %d × (%d − %d) + %d² ÷ %d.", a, b, c, d, e, f),
				want, a-b*(c+d)+e*e/f, a+b*(c-d)+e*e/f), true
		}
	}
}

var shopGoods = []struct{ one, many string }{
	{"pen", "pens"}, {"notebook", "notebooks"}, {"apple", "apples"}, {"loaf of bread", "loaves of bread"},
	{"bottle of water", "bottles of water"}, {"candle", "candles"}, {"stamp", "stamps"}, {"roll of tape", "rolls of tape"},
}

// genArithShop: a basket, a deal and the change from a note.
func genArithShop(r *rng, level int) (problem, bool) {
	n := level + 1
	goods := sample(r, shopGoods, n)
	var parts, buys []string
	total := 0
	var prices, qty []int
	for _, g := range goods {
		price := r.between(3, 90) * 5 * level
		q := r.between(2, 4+2*level)
		prices, qty = append(prices, price), append(qty, q)
		parts = append(parts, fmt.Sprintf("%s costs %s", an(g.one), money(price)))
		buys = append(buys, fmt.Sprintf("%d %s", q, g.many))
		total += price * q
	}
	q := fmt.Sprintf("At a shop, %s. Sam buys %s", core.List(parts), core.List(buys))
	naive := total
	switch level {
	case 2:
		// Every third unit of the first item is free.
		free := qty[0] / 3
		if free == 0 {
			return problem{}, false
		}
		total -= free * prices[0]
		q += fmt.Sprintf("; the %s are on a \"buy two, get a third free\" offer", goods[0].many)
	case 3:
		// 15% off the whole basket when it comes to more than $40.
		if total <= 4000 || total*85%100 != 0 {
			return problem{}, false
		}
		total = total * 85 / 100
		q += "; the shop takes 15% off any basket over $40"
	}
	note := 0
	for _, n := range []int{1000, 2000, 5000, 10000, 20000} {
		if n > total {
			note = n
			break
		}
	}
	if note == 0 {
		return problem{}, false
	}
	change := note - total
	q += fmt.Sprintf(", and hands over %s. How much change does Sam receive?", money(note))
	return moneyProblem(q, change, note-naive, total), true
}

// genArithPercent: percentages of amounts, successive changes, and the
// price before a discount and a tax.
func genArithPercent(r *rng, level int) (problem, bool) {
	switch level {
	case 1:
		price := r.between(4, 40) * 10
		pct := pick(r, []int{10, 20, 25, 30, 40, 50, 75})
		if price*pct%100 != 0 {
			return problem{}, false
		}
		sale := price * (100 - pct) / 100
		return intProblem(fmt.Sprintf("A jacket costs $%d. In a sale its price is cut by %d%%. What is the sale price, "+
			"in dollars?", price, pct), sale, price*pct/100), true
	case 2:
		p := r.between(40, 400)
		up, down := r.between(5, 40), r.between(5, 40)
		cents := p * (100 + up) * (100 - down) // in 1/100 of a cent
		if cents%100 != 0 || up == down {
			return problem{}, false
		}
		want := cents / 100
		naive := p * (100 + up - down)
		return moneyProblem(fmt.Sprintf("A bicycle cost $%d. Its price was raised by %d%%, and later the new price was "+
			"lowered by %d%%. What does it cost now?", p, up, down), want, naive), true
	default:
		disc := pick(r, []int{10, 15, 20, 25, 30, 40})
		tax := pick(r, []int{5, 6, 8, 10, 12, 20})
		p := r.between(8, 120) * 5 // dollars
		// final price in cents = p*100*(100-disc)*(100+tax)/10000
		num := p * (100 - disc) * (100 + tax)
		if num%100 != 0 {
			return problem{}, false
		}
		final := num / 100
		naive := new(big.Rat).Mul(frac(final, 100), frac(100+disc-tax, 100))
		pr := intProblem(fmt.Sprintf("A shop takes %d%% off the marked price of a coat and then adds %d%% sales tax to the "+
			"discounted price. The customer pays %s. What was the marked price, in dollars?", disc, tax, money(final)), p)
		if naive.IsInt() {
			pr.decoys = append(pr.decoys, naive.Num().String())
		}
		return pr, true
	}
}

// genArithInterest: simple interest, and compound interest to the cent.
func genArithInterest(r *rng, level int) (problem, bool) {
	switch level {
	case 1:
		p, rate, years := r.between(2, 40)*100, r.between(2, 9), r.between(2, 6)
		want := p * rate * years / 100
		return intProblem(fmt.Sprintf("You deposit $%s at %d%% simple interest per year. How many dollars of interest "+
			"have you earned after %d years?", commas(p), rate, years), want, p*rate/100, p+want), true
	case 2:
		p, rate, years := r.between(10, 90)*100, r.between(2, 7), r.between(2, 3)
		v := rat(p * 100)
		for range years {
			v = ratMul(v, frac(100+rate, 100))
		}
		if !v.IsInt() {
			return problem{}, false
		}
		c := int(v.Num().Int64())
		return moneyProblem(fmt.Sprintf("$%s is invested at %d%% a year, compounded yearly. What is it worth after %d years?",
			commas(p), rate, years), c, p*100*(100+rate*years)/100), true
	default:
		p, years := r.between(20, 200)*50, r.between(4, 8)
		rate := frac(r.between(5, 45), 10) // 0.5% to 4.5%
		m := pick(r, []int{4, 12})
		per := ratQuo(rate, rat(100*m))
		v := rat(p)
		for range years * m {
			v = ratMul(v, ratAdd(rat(1), per))
		}
		yearly := rat(p)
		for range years {
			yearly = ratMul(yearly, ratAdd(rat(1), ratQuo(rate, rat(100))))
		}
		how := map[int]string{4: "quarterly", 12: "monthly"}[m]
		return decimalProblem(fmt.Sprintf("$%s is deposited at a nominal annual rate of %s%%, compounded %s. No money is "+
			"added or taken out. What is the balance after %d years, to the cent?", commas(p), number(rate, 1), how, years),
			v, 2, yearly)
	}
}

// genCountChoose: handshakes, committees, and committees with a condition.
func genCountChoose(r *rng, level int) (problem, bool) {
	switch level {
	case 1:
		n := r.between(5, 20)
		return intProblem(fmt.Sprintf("At a meeting of %d people, everyone shakes hands once with everyone else. How many "+
			"handshakes take place?", n), n*(n-1)/2, n*(n-1), n*n/2), true
	case 2:
		w, m := r.between(4, 9), r.between(4, 9)
		k := r.between(3, 5)
		j := r.between(1, k-1)
		want := binom(w, j) * binom(m, k-j)
		return intProblem(fmt.Sprintf("A club has %d women and %d men. In how many ways can it choose a committee of %d "+
			"with exactly %s?", w, m, k, women(j)), want, binom(w+m, k)), true
	default:
		if r.chance(1, 2) {
			w, m := r.between(5, 9), r.between(5, 9)
			k := r.between(4, 6)
			j := r.between(2, k-1)
			want := 0
			for i := j; i <= k; i++ {
				want += binom(w, i) * binom(m, k-i)
			}
			return intProblem(fmt.Sprintf("A club has %d women and %d men. In how many ways can it choose a committee of %d "+
				"with at least %d women?", w, m, k, j), want, binom(w, j)*binom(m, k-j), binom(w, j)*binom(w+m-j, k-j)), true
		}
		n, k := r.between(8, 14), r.between(3, 6)
		want := binom(n, k) - binom(n-2, k-2)
		return intProblem(fmt.Sprintf("From %d volunteers a team of %d is chosen. Two of the volunteers, %s and %s, refuse "+
			"to serve on the same team. How many different teams are possible?", n, k, people[0], people[1]),
			want, binom(n, k), binom(n-2, k)), true
	}
}

func women(n int) string {
	if n == 1 {
		return "one woman"
	}
	return fmt.Sprintf("%d women", n)
}

// genProbDice: probabilities of dice events, as fractions in lowest terms.
func genProbDice(r *rng, level int) (problem, bool) {
	var q string
	var num, den int
	var decoys []*big.Rat
	switch level {
	case 1:
		if r.chance(1, 4) {
			lo := r.between(2, 5)
			num, den = 7-lo, 6
			q = fmt.Sprintf("A fair six-sided die is rolled once. What is the probability of rolling %d or more?", lo)
			decoys = append(decoys, frac(6-lo, 6))
			break
		}
		red, blue, green := r.between(1, 9), r.between(1, 9), r.between(1, 9)
		num, den = red, red+blue+green
		q = fmt.Sprintf("A bag holds %d red, %d blue and %d green marbles. One marble is drawn at random. What is the "+
			"probability that it is red?", red, blue, green)
		decoys = append(decoys, frac(red, blue+green))
	case 2:
		k := r.between(3, 11)
		den = 36
		for a := 1; a <= 6; a++ {
			for b := 1; b <= 6; b++ {
				if a+b >= k {
					num++
				}
			}
		}
		q = fmt.Sprintf("Two fair six-sided dice are rolled. What is the probability that their total is at least %d?", k)
		decoys = append(decoys, frac(num-(6-abs(7-k)), 36)) // "more than k"
	default:
		if r.chance(1, 2) {
			k := r.between(5, 16)
			den = 216
			for a := 1; a <= 6; a++ {
				for b := 1; b <= 6; b++ {
					for c := 1; c <= 6; c++ {
						if a+b+c == k {
							num++
						}
					}
				}
			}
			q = fmt.Sprintf("Three fair six-sided dice are rolled. What is the probability that their total is exactly %d?", k)
			decoys = append(decoys, frac(1, 16))
		} else {
			n := r.between(3, 5)
			den = 1
			five := 1
			for range n {
				den *= 6
				five *= 5
			}
			num = den - five
			q = fmt.Sprintf("A fair six-sided die is rolled %d times. What is the probability of at least one six?", n)
			decoys = append(decoys, frac(n, 6))
		}
	}
	want := frac(num, den)
	// A decimal answer is read to a third of the gap between neighbouring
	// outcomes counts (1/den), and never looser than 0.0005.
	tol := frac(1, 3*den)
	if tol.Cmp(frac(1, 2000)) > 0 {
		tol = frac(1, 2000)
	}
	p := problem{
		question: q + " Give it as a fraction in lowest terms. " + askFor("<fraction>"),
		answer:   want.RatString(), check: numberCheck(want, tol),
	}
	for _, x := range append(decoys, ratAdd(want, frac(1, den)), ratSub(want, frac(1, den))) {
		if x.Cmp(want) != 0 && x.Sign() >= 0 {
			p.decoys = append(p.decoys, x.RatString())
		}
	}
	return p, true
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// genClockAngle: the smaller angle between the hands of a clock.
func genClockAngle(r *rng, level int) (problem, bool) {
	h := r.between(1, 12)
	m := r.between(1, 59)
	if level == 1 {
		m = r.between(0, 5) * 10
	}
	twice := abs(60*(h%12) - 11*m) // twice the angle: |30h − 5.5m| × 2
	if twice > 360 {
		twice = 720 - twice
	}
	want := frac(twice, 2)
	q := fmt.Sprintf("What is the smaller angle, in degrees, between the hour hand and the minute hand of an analogue "+
		"clock at %d:%s?", h, pad2(m))
	if level == 3 {
		s := r.between(1, 59)
		// Seconds move both hands: the minute hand 0.1° a second, the hour
		// hand 1/120° a second.
		ang := new(big.Rat).Sub(
			ratAdd(rat(30*(h%12)), ratAdd(frac(m, 2), frac(s, 120))),
			ratAdd(rat(6*m), frac(s, 10)))
		ang.Abs(ang)
		if ang.Cmp(rat(180)) > 0 {
			ang = ratSub(rat(360), ang)
		}
		q = fmt.Sprintf("What is the smaller angle, in degrees, between the hour hand and the minute hand of an analogue "+
			"clock at %d:%s:%s (both hands move smoothly)? Round to two decimal places.", h, pad2(m), pad2(s))
		return decimalProblem(q, ang, 2, want)
	}
	p, ok := decimalProblem(q, want, 1, ratSub(rat(360), want), rat(abs(30*(h%12)-6*m)))
	if want.IsInt() {
		p.answer = want.Num().String()
	}
	return p, ok
}

// genNumberBase: binary and hexadecimal numerals read as decimals.
func genNumberBase(r *rng, level int) (problem, bool) {
	switch level {
	case 1:
		n := r.between(33, 255)
		return intProblem(fmt.Sprintf("Convert the binary number %b to decimal.", n), n, n^1<<(bitLen(n)-2)), true
	case 2:
		n := r.between(0x200, 0xfff)
		return intProblem(fmt.Sprintf("Convert the hexadecimal number %X to decimal.", n), n, n^0x10), true
	default:
		n := r.between(0x1000, 0xfffff)
		o := r.between(64, 511)
		return intProblem(fmt.Sprintf("Add the hexadecimal number %X and the octal number %o, and give the sum in "+
			"decimal.", n, o), n+o, n+atoiBase10(fmt.Sprintf("%o", o))), true
	}
}

func bitLen(n int) int {
	l := 0
	for ; n > 0; n >>= 1 {
		l++
	}
	return l
}

// atoiBase10 reads digits as if decimal: the mistake of ignoring a base.
func atoiBase10(s string) int { return atoi(s) }

// genLCMBuses: when departures on different intervals next coincide; at
// level 3 the first departures differ, and the answer is a simultaneous
// congruence found by trying every minute.
func genLCMBuses(r *rng, level int) (problem, bool) {
	if level == 3 {
		a, b := r.between(6, 25), r.between(6, 25)
		off := r.between(1, min(a, b)-1) * 5 % b
		if a == b || off == 0 {
			return problem{}, false
		}
		t := -1
		for m := 0; m <= a*b; m++ {
			if m%a == 0 && m >= off && (m-off)%b == 0 {
				t = m
				break
			}
		}
		if t < 0 || t == a*b {
			return problem{}, false
		}
		return intProblem(fmt.Sprintf("The number 4 bus leaves the station at 06:00 and then every %d minutes. The number "+
			"9 bus first leaves at 06:%s and then every %d minutes. How many minutes after 06:00 do the two buses first "+
			"leave at the same moment?", a, pad2(off), b), t, lcm(a, b), a*b), true
	}
	n := level + 1
	lines := []string{"the number 4 bus", "the number 9 bus", "the number 17 bus"}
	var ivs []string
	l, prod := 1, 1
	var gaps []int
	for i := range n {
		g := r.between(4, 8*level+6)
		gaps = append(gaps, g)
		ivs = append(ivs, fmt.Sprintf("%s leaves every %d minutes", lines[i], g))
		l = lcm(l, g)
		prod *= g
	}
	for _, g := range gaps {
		if l == g {
			return problem{}, false
		}
	}
	if l == prod && level > 1 || l > 600 {
		return problem{}, false
	}
	all := "both"
	if n > 2 {
		all = "all"
	}
	q := fmt.Sprintf("At a bus station, %s. They %s leave together at 07:00. How many minutes after 07:00 do they next "+
		"%s leave together?", core.List(ivs), all, all)
	return intProblem(q, l, prod), true
}

// genRemainder: the remainder of a power.
func genRemainder(r *rng, level int) (problem, bool) {
	var a, n, m int
	switch level {
	case 1:
		a, n, m = r.between(2, 5), r.between(3, 5), r.between(5, 11)
	case 2:
		a, n, m = r.between(2, 9), r.between(12, 60), r.between(7, 13)
	default:
		a, n, m = r.between(3, 19), r.between(100, 2000), r.between(17, 97)
	}
	want := int(new(big.Int).Exp(big.NewInt(int64(a)), big.NewInt(int64(n)), big.NewInt(int64(m))).Int64())
	if want == 0 {
		return problem{}, false
	}
	naive := int(new(big.Int).Exp(big.NewInt(int64(a)), big.NewInt(int64(n-1)), big.NewInt(int64(m))).Int64())
	return intProblem(fmt.Sprintf("What is the remainder when %d^%d is divided by %d?", a, n, m), want, naive), true
}

// genGCDCuts: cutting lengths into equal pieces, as long as possible, and
// tiling a floor with the largest square tile that fits exactly.
func genGCDCuts(r *rng, level int) (problem, bool) {
	g := r.between(2, 6+6*level)
	x, y, z := r.between(2, 9), r.between(2, 9), r.between(2, 9)
	if x == y || gcd(x, y) != 1 {
		return problem{}, false
	}
	// The common divisor a careless solver settles for: g over its
	// smallest prime factor.
	smaller := g
	for p := 2; p <= g; p++ {
		if g%p == 0 {
			smaller = g / p
			break
		}
	}
	switch level {
	case 1:
		a, b := g*x, g*y
		return intProblem(fmt.Sprintf("Two ropes, %d cm and %d cm long, are cut into pieces that are all the same whole "+
			"number of centimetres long, with nothing left over. The pieces are to be as long as possible. How long is "+
			"each piece, in cm?", a, b), g, smaller, x+y), true
	case 2:
		if z == x || z == y || gcd(gcd(x, y), z) != 1 {
			return problem{}, false
		}
		a, b, c := g*x, g*y, g*z
		return intProblem(fmt.Sprintf("A carpenter has three planks, %d cm, %d cm and %d cm long, and cuts all of them "+
			"into pieces of one equal whole-centimetre length, as long as possible, with no waste. How many pieces "+
			"does she get in all?", a, b, c), x+y+z, g, (a+b+c)/smaller), true
	default:
		g = r.between(20, 60)
		x, y = r.between(3, 11), r.between(3, 11)
		if x == y || gcd(x, y) != 1 {
			return problem{}, false
		}
		a, b := g*x, g*y
		if a%100 == 0 || b%100 == 0 {
			return problem{}, false
		}
		small := 0
		for d := g - 1; d >= 1; d-- {
			if g%d == 0 {
				small = d
				break
			}
		}
		return intProblem(fmt.Sprintf("A floor %s m by %s m is to be covered with identical square tiles, whole tiles "+
			"only and none cut. Each tile's side is a whole number of centimetres, as large as possible. How many tiles "+
			"are needed?", number(frac(a, 100), 2), number(frac(b, 100), 2)), x*y, (a/small)*(b/small), g), true
	}
}

// genWeightedMean: a course grade from weighted parts, the mean of two
// groups put together, and the final-exam score a target needs.
func genWeightedMean(r *rng, level int) (problem, bool) {
	switch level {
	case 1:
		w1 := pick(r, []int{10, 20, 30})
		w2 := pick(r, []int{20, 30, 40})
		w3 := 100 - w1 - w2
		s1, s2, s3 := r.between(50, 100), r.between(40, 100), r.between(40, 100)
		want := frac(w1*s1+w2*s2+w3*s3, 100)
		return decimalProblem(fmt.Sprintf("A course grade counts homework %d%%, the midterm %d%% and the final exam %d%%. "+
			"Noor scores %d on homework, %d on the midterm and %d on the final. What is Noor's course grade? Give one "+
			"decimal place.", w1, w2, w3, s1, s2, s3), want, 1, frac(s1+s2+s3, 3))
	case 2:
		n1, n2 := r.between(12, 35), r.between(12, 35)
		m1, m2 := r.between(55, 90), r.between(55, 90)
		if n1 == n2 || m1 == m2 {
			return problem{}, false
		}
		return decimalProblem(fmt.Sprintf("One class of %d pupils averages %d marks on a test; another class of %d pupils "+
			"averages %d on the same test. What is the average mark of all %d pupils together? Round to two decimal "+
			"places.", n1, m1, n2, m2, n1+n2), frac(n1*m1+n2*m2, n1+n2), 2, frac(m1+m2, 2))
	default:
		ws := []int{r.between(2, 5) * 5, r.between(2, 5) * 5, r.between(2, 5) * 5}
		wf := 100 - ws[0] - ws[1] - ws[2]
		ss := []int{r.between(45, 98), r.between(45, 98), r.between(45, 98)}
		x := r.between(30, 100)
		t100 := ws[0]*ss[0] + ws[1]*ss[1] + ws[2]*ss[2] + wf*x
		if t100%10 != 0 || wf < 25 {
			return problem{}, false
		}
		target := frac(t100, 100)
		// Treating the four parts as equal: 4T − the three scores.
		naive := ratSub(ratMul(target, rat(4)), rat(ss[0]+ss[1]+ss[2]))
		p := intProblem(fmt.Sprintf("A course is graded on three assignments worth %d%%, %d%% and %d%% and a final exam "+
			"worth the rest. Tomas scored %d, %d and %d on the assignments. What must he score on the final exam for a "+
			"course grade of exactly %s?", ws[0], ws[1], ws[2], ss[0], ss[1], ss[2], number(target, 1)), x)
		if naive.IsInt() && naive.Cmp(rat(x)) != 0 {
			p.decoys = append(p.decoys, naive.Num().String())
		}
		return p, true
	}
}

// genSequenceTerm: a far term of an arithmetic or geometric sequence, the
// sum of an arithmetic one, and a far term of a sequence whose differences
// grow steadily.
func genSequenceTerm(r *rng, level int) (problem, bool) {
	switch level {
	case 1:
		a, d, n := r.between(-10, 30), r.between(2, 12), r.between(12, 40)
		return intProblem(fmt.Sprintf("The arithmetic sequence %d, %d, %d, %d, … goes up by the same amount each time. What "+
			"is its %s term?", a, a+d, a+2*d, a+3*d, ordinal(n)), a+(n-1)*d, a+n*d), true
	case 2:
		if r.chance(1, 2) {
			a, q, n := r.between(2, 9), r.between(2, 3), r.between(6, 10)
			want := a
			for range n - 1 {
				want *= q
			}
			return intProblem(fmt.Sprintf("Each term of the sequence %d, %d, %d, … is the one before multiplied by the same "+
				"number. What is its %s term?", a, a*q, a*q*q, ordinal(n)), want, want*q), true
		}
		a, d, n := r.between(1, 20), r.between(2, 9), r.between(15, 40)
		last := a + (n-1)*d
		return intProblem(fmt.Sprintf("What is the sum of the first %d terms of the arithmetic sequence %d, %d, %d, …?",
			n, a, a+d, a+2*d), n*(a+last)/2, (n-1)*(a+last)/2, n*(a+a+n*d)/2), true
	default:
		p, q, c := r.between(1, 4), r.between(-6, 6), r.between(-10, 10)
		t := func(k int) int { return p*k*k + q*k + c }
		n := r.between(15, 40)
		var shown []string
		for k := 1; k <= 5; k++ {
			shown = append(shown, fmt.Sprint(t(k)))
		}
		linear := t(5) + (n-5)*(t(5)-t(4))
		return intProblem(fmt.Sprintf("In the sequence %s, …, the differences between consecutive terms grow by the "+
			"same amount each time. What is its %s term?", strings.Join(shown, ", "), ordinal(n)), t(n), linear, t(n+1)), true
	}
}

// ordinal writes 1st, 2nd, 3rd, 11th, 22nd.
func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return fmt.Sprint(n) + suffix
}

// genVennCount: survey counts by inclusion and exclusion, over two sets and
// then three; every region is chosen first, so the answer is exact.
func genVennCount(r *rng, level int) (problem, bool) {
	switch level {
	case 1:
		a, b, both, none := r.between(3, 20), r.between(3, 20), r.between(1, 10), r.between(1, 12)
		n, ta, tb := a+b+both+none, a+both, b+both
		return intProblem(fmt.Sprintf("In a class of %d pupils, %d like tea, %d like coffee, and %d like both. How many "+
			"like neither?", n, ta, tb, both), none, n-ta-tb, n-ta-tb+2*both), true
	case 2:
		a, b, both, none := r.between(10, 60), r.between(10, 60), r.between(5, 40), r.between(5, 30)
		n, ta, tb := a+b+both+none, a+both, b+both
		return intProblem(fmt.Sprintf("Of %d people surveyed, %d read the morning paper, %d read the evening paper and "+
			"%d read neither. How many read both papers?", n, ta, tb, none), both, ta+tb-n, n-none), true
	default:
		// Regions: only A, only B, only C, AB only, AC only, BC only, all three.
		var reg [7]int
		for i := range reg {
			reg[i] = r.between(2, 25)
		}
		none := r.between(0, 20)
		a := reg[0] + reg[3] + reg[4] + reg[6]
		b := reg[1] + reg[3] + reg[5] + reg[6]
		c := reg[2] + reg[4] + reg[5] + reg[6]
		ab, ac, bc := reg[3]+reg[6], reg[4]+reg[6], reg[5]+reg[6]
		n := none
		for _, x := range reg {
			n += x
		}
		want := reg[0] + reg[1] + reg[2]
		union := a + b + c - ab - ac - bc + reg[6]
		return intProblem(fmt.Sprintf("Of %d students, %d take French, %d take German and %d take Spanish; %d take French "+
			"and German, %d take French and Spanish, %d take German and Spanish, and %d take all three. How many take "+
			"exactly one of the three languages?", n, a, b, c, ab, ac, bc, reg[6]), want, union,
			a+b+c-2*(ab+ac+bc), n-none-want), true
	}
}
