package bank

import (
	"fmt"
	"math/big"
	"sort"
	"strings"
)

// Conversion families. The factors are the exact legal definitions (the
// 1959 international yard and pound, the US gallon of 231 cubic inches, the
// imperial gallon of 4.54609 litres), so every reference answer is exact
// before its rounding.

type measure struct {
	name, plural string
	base         *big.Rat // in the quantity's base unit (metre, kilogram, litre)
}

var (
	mm     = measure{"millimetre", "millimetres", frac(1, 1000)}
	cm     = measure{"centimetre", "centimetres", frac(1, 100)}
	metre  = measure{"metre", "metres", rat(1)}
	km     = measure{"kilometre", "kilometres", rat(1000)}
	inch   = measure{"inch", "inches", frac(254, 10000)}
	foot   = measure{"foot", "feet", frac(3048, 10000)}
	yard   = measure{"yard", "yards", frac(9144, 10000)}
	mile   = measure{"mile", "miles", frac(1609344, 1000)}
	nmile  = measure{"nautical mile", "nautical miles", rat(1852)}
	gram   = measure{"gram", "grams", frac(1, 1000)}
	kg     = measure{"kilogram", "kilograms", rat(1)}
	tonne  = measure{"tonne", "tonnes", rat(1000)}
	ounce  = measure{"ounce (avoirdupois)", "ounces (avoirdupois)", frac(28349523125, 1_000_000_000_000)}
	pound  = measure{"pound", "pounds", frac(45359237, 100_000_000)}
	stone  = measure{"stone", "stone", frac(14*45359237, 100_000_000)}
	ml     = measure{"millilitre", "millilitres", frac(1, 1000)}
	litre  = measure{"litre", "litres", rat(1)}
	usgal  = measure{"US gallon", "US gallons", frac(3785411784, 1_000_000_000)}
	ukgal  = measure{"imperial gallon", "imperial gallons", frac(454609, 100_000)}
	uscup  = measure{"US cup", "US cups", frac(3785411784, 16_000_000_000)}
	usfloz = measure{"US fluid ounce", "US fluid ounces", frac(3785411784, 128_000_000_000)}
)

// conversions lists the pairs each level asks about: metric within metric
// at level 1, metric and customary at level 2, and the rarer units at 3.
var conversions = map[int][][2]measure{
	1: {{km, metre}, {metre, cm}, {cm, mm}, {kg, gram}, {tonne, kg}, {litre, ml}, {metre, mm}, {km, cm}},
	2: {{mile, km}, {inch, cm}, {foot, metre}, {pound, kg}, {usgal, litre}, {km, mile}, {kg, pound}, {yard, metre}},
	3: {{nmile, mile}, {stone, kg}, {ukgal, usgal}, {ounce, gram}, {usfloz, ml}, {uscup, ml}, {foot, inch}, {mile, yard}},
}

// genUnitConvert: one quantity from one unit to another.
func genUnitConvert(r *rng, level int) (problem, bool) {
	pair := pick(r, conversions[level])
	from, to := pair[0], pair[1]
	var amount *big.Rat
	switch level {
	case 1:
		amount = frac(r.between(11, 999), pick(r, []int{1, 10, 100}))
	case 2:
		amount = frac(r.between(15, 950), 10)
	default:
		amount = frac(r.between(101, 9999), 100)
	}
	want := ratQuo(ratMul(amount, from.base), to.base)
	name := from.plural
	if amount.Cmp(rat(1)) == 0 {
		name = from.name
	}
	q := fmt.Sprintf("Convert %s %s to %s.", number(amount, 2), name, to.plural)
	if level == 1 {
		if !want.IsInt() && want.Denom().Int64() > 100 {
			return problem{}, false
		}
		p, ok := decimalProblem(q, want, 2, ratQuo(ratMul(amount, to.base), from.base), ratMul(want, rat(10)))
		p.answer = number(want, 2)
		return p, ok
	}
	return decimalProblem(q+" Round to two decimal places.", want, 2,
		ratQuo(ratMul(amount, to.base), from.base))
}

// genTemperature: Celsius and Fahrenheit.
func genTemperature(r *rng, level int) (problem, bool) {
	switch level {
	case 1:
		c := r.between(-8, 20) * 5
		f := c*9/5 + 32
		return intProblem(fmt.Sprintf("Convert %d °C to degrees Fahrenheit.", c), f, c*9/5, (c+32)*9/5), true
	case 2:
		f := r.between(-20, 230)
		want := ratMul(rat(f-32), frac(5, 9))
		return decimalProblem(fmt.Sprintf("Convert %d °F to degrees Celsius. Round to one decimal place.", f), want, 1,
			ratSub(ratMul(rat(f), frac(5, 9)), rat(32)))
	default:
		// A change of temperature converts without the offset; the reading
		// does not.
		c1 := r.between(-30, 20)
		rise := r.between(3, 45)
		f2 := ratAdd(ratMul(rat(c1+rise), frac(9, 5)), rat(32))
		k := ratAdd(rat(c1+rise), frac(27315, 100))
		if r.chance(1, 2) {
			return decimalProblem(fmt.Sprintf("A liquid at %d °C warms by %d kelvin. What is its new temperature in degrees "+
				"Fahrenheit? Round to one decimal place.", c1, rise), f2, 1,
				ratAdd(ratMul(rat(c1), frac(9, 5)), ratAdd(rat(32), rat(rise))))
		}
		return decimalProblem(fmt.Sprintf("A liquid at %d °C warms by %d Fahrenheit degrees. What is its new temperature in "+
			"kelvin? Round to two decimal places.", c1, rise),
			ratAdd(ratAdd(rat(c1), ratMul(rat(rise), frac(5, 9))), frac(27315, 100)), 2, k)
	}
}

// genUnitRate: speeds and fuel economy, where two units change at once.
func genUnitRate(r *rng, level int) (problem, bool) {
	switch level {
	case 1:
		kmh := r.between(2, 40) * 6
		return decimalProblem(fmt.Sprintf("A train travels at a steady %d km/h. How many kilometres does it travel in one "+
			"minute?", kmh), frac(kmh, 60), 1, frac(kmh, 100))
	case 2:
		if r.chance(1, 2) {
			kmh := r.between(20, 180)
			return decimalProblem(fmt.Sprintf("Convert %d km/h to metres per second. Round to two decimal places.", kmh),
				frac(kmh*1000, 3600), 2, frac(kmh*3600, 1000))
		}
		mph := r.between(15, 90)
		return decimalProblem(fmt.Sprintf("Convert %d miles per hour to kilometres per hour. Round to two decimal places.", mph),
			ratMul(rat(mph), frac(1609344, 1000000)), 2, ratQuo(rat(mph), frac(1609344, 1000000)))
	default:
		if r.chance(1, 2) {
			mpg := r.between(18, 60)
			// litres per 100 km = 100 / (mpg × km per mile / litres per gallon)
			kmPerL := ratQuo(ratMul(rat(mpg), mile.base), ratMul(usgal.base, rat(1000)))
			want := ratQuo(rat(100), kmPerL)
			ukKmPerL := ratQuo(ratMul(rat(mpg), mile.base), ratMul(ukgal.base, rat(1000)))
			return decimalProblem(fmt.Sprintf("A car does %d miles per US gallon. What is its fuel consumption in litres "+
				"per 100 km? Round to two decimal places.", mpg), want, 2, ratQuo(rat(100), ukKmPerL))
		}
		cents := r.between(150, 1500)
		// price per pound to price per kilogram
		want := ratQuo(frac(cents, 100), pound.base)
		return decimalProblem(fmt.Sprintf("Cheese sells for %s a pound. What is that price per kilogram, in dollars? "+
			"Round to the cent.", money(cents)), want, 2, ratMul(frac(cents, 100), pound.base))
	}
}

var romanDigits = []struct {
	value  int
	symbol string
}{
	{1000, "M"}, {900, "CM"}, {500, "D"}, {400, "CD"}, {100, "C"}, {90, "XC"},
	{50, "L"}, {40, "XL"}, {10, "X"}, {9, "IX"}, {5, "V"}, {4, "IV"}, {1, "I"},
}

// romanNumeral writes 1 to 3999 in standard Roman numerals.
func romanNumeral(n int) string {
	var b strings.Builder
	for _, d := range romanDigits {
		for ; n >= d.value; n -= d.value {
			b.WriteString(d.symbol)
		}
	}
	return b.String()
}

// romanAdditive reads a numeral adding every symbol, the slip of a reader
// who misses the subtractive pairs (XC read as 110).
func romanAdditive(s string) int {
	v := map[rune]int{'I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100, 'D': 500, 'M': 1000}
	n := 0
	for _, c := range s {
		n += v[c]
	}
	return n
}

// genRoman: Roman numerals read as numbers, and sums and differences of
// two numerals.
func genRoman(r *rng, level int) (problem, bool) {
	switch level {
	case 1:
		n := r.between(14, 89)
		s := romanNumeral(n)
		return intProblem(fmt.Sprintf("Write the Roman numeral %s as an ordinary number.", s), n, romanAdditive(s)), true
	case 2:
		n := r.between(400, 3999)
		s := romanNumeral(n)
		if romanAdditive(s) == n {
			return problem{}, false
		}
		return intProblem(fmt.Sprintf("Write the Roman numeral %s as an ordinary number.", s), n, romanAdditive(s)), true
	default:
		a, b := r.between(1000, 3999), r.between(100, 999)
		sa, sb := romanNumeral(a), romanNumeral(b)
		if romanAdditive(sa) == a && romanAdditive(sb) == b {
			return problem{}, false
		}
		if r.chance(1, 2) {
			return intProblem(fmt.Sprintf("Subtract the Roman numeral %s from the Roman numeral %s, and give the "+
				"difference as an ordinary number.", sb, sa), a-b, romanAdditive(sa)-romanAdditive(sb)), true
		}
		return intProblem(fmt.Sprintf("Add the Roman numerals %s and %s, and give the sum as an ordinary number.", sa, sb),
			a+b, romanAdditive(sa)+romanAdditive(sb)), true
	}
}

// brands are the names unit-price questions compare: invented words, so
// that none is read out of ordinary prose.
var brands = []string{"Tolla", "Vimo", "Kerra", "Ostra", "Pelli", "Zunda"}

// genUnitPrice: which pack is cheapest for its weight, with the packs
// weighed in different units (and at level 3 one with extra free).
func genUnitPrice(r *rng, level int) (problem, bool) {
	n := level + 1
	units := map[int][]measure{1: {gram}, 2: {gram, kg}, 3: {gram, kg, ounce, pound}}[level]
	names := sample(r, brands, n)
	var lines []string
	perKg := make([]*big.Rat, n)
	for i := range n {
		u := pick(r, units)
		var amount *big.Rat
		switch u {
		case gram:
			amount = rat(r.between(4, 40) * 25)
		case kg:
			amount = frac(r.between(5, 30), 10)
		case ounce:
			amount = rat(r.between(6, 40))
		default:
			amount = frac(r.between(2, 10), 2)
		}
		weight := ratMul(amount, u.base) // kilograms
		// $6 to $14 a kilogram, so the packs are close.
		price := ratMul(weight, rat(r.between(600, 1400)))
		cents := int(new(big.Int).Quo(price.Num(), price.Denom()).Int64())
		if cents < 50 {
			return problem{}, false
		}
		name := u.plural
		extra := 0 // per cent more at the same price
		if level == 3 && i == 0 {
			extra = pick(r, []int{20, 25, 50})
			weight = ratMul(weight, frac(100+extra, 100))
		}
		if amount.Cmp(rat(1)) == 0 {
			name = u.name
		}
		line := fmt.Sprintf("%s sells %s %s for %s", names[i], number(amount, 2), name, money(cents))
		if extra > 0 {
			line += fmt.Sprintf(", and this week the pack holds %d%% extra free", extra)
		}
		lines = append(lines, line)
		perKg[i] = ratQuo(frac(cents, 100), weight)
	}
	order := r.perm(n)
	sort.SliceStable(order, func(i, j int) bool { return perKg[order[i]].Cmp(perKg[order[j]]) < 0 })
	best, next := order[0], order[1]
	// The cheapest must win by at least 3%, so that no honest rounding of
	// the unit prices changes the answer.
	if ratMul(perKg[best], frac(103, 100)).Cmp(perKg[next]) > 0 {
		return problem{}, false
	}
	q := fmt.Sprintf("The same coffee comes in packs from different brands: %s. Which brand gives the most coffee for the "+
		"money, that is the lowest price per kilogram?", strings.Join(lines, "; "))
	p := problem{question: q + " " + askFor("<brand>"), answer: names[best], check: choiceCheck(names, names[best])}
	for _, i := range order[1:] {
		p.decoys = append(p.decoys, names[i])
	}
	return p, true
}
