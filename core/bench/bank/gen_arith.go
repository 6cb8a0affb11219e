package bank

import (
	"fmt"
	"math/big"
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
	q := fmt.Sprintf("At a shop, %s. Sam buys %s", listing(parts), listing(buys))
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
		"%s leave together?", listing(ivs), all, all)
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
