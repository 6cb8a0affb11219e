package bank

import (
	"math/big"
	"strconv"
	"strings"

	"github.com/conclavehq/conclave/core"
)

// The closing request of every verifiable question, so that a checker can
// find the final answer in free prose. askLine opens it.
const (
	askLine   = "End your reply with a line of the form"
	askNumber = askLine + " \"Answer: <number>\"."
	askName   = askLine + " \"Answer: <name>\"."
)

func askFor(what string) string {
	return askLine + " \"Answer: " + what + "\"."
}

// commas writes an integer with thousands separators: 12,450.
func commas(n int) string { return core.Thousands(int64(n)) }

// money writes cents as dollars: $12.40.
func money(cents int) string {
	return "$" + commas(cents/100) + "." + pad2(cents%100)
}

func pad2(n int) string {
	if n < 10 {
		return "0" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

func rat(n int) *big.Rat            { return big.NewRat(int64(n), 1) }
func frac(n, d int) *big.Rat        { return big.NewRat(int64(n), int64(d)) }
func ratMul(a, b *big.Rat) *big.Rat { return new(big.Rat).Mul(a, b) }
func ratAdd(a, b *big.Rat) *big.Rat { return new(big.Rat).Add(a, b) }
func ratSub(a, b *big.Rat) *big.Rat { return new(big.Rat).Sub(a, b) }
func ratQuo(a, b *big.Rat) *big.Rat { return new(big.Rat).Quo(a, b) }

// unit is 10^-dp: the last decimal place of a rounded answer.
func unit(dp int) *big.Rat {
	return new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(dp)), nil))
}

// halfUnit is the tolerance of an answer asked for to dp decimal places.
func halfUnit(dp int) *big.Rat { return ratQuo(unit(dp), rat(2)) }

// round rounds v to dp decimal places, half away from zero, and reports
// whether v sat on (or within a millionth of a unit of) a half, where two
// honest roundings disagree; generators retry those.
func round(v *big.Rat, dp int) (*big.Rat, bool) {
	scaled := ratMul(v, new(big.Rat).Inv(unit(dp)))
	neg := scaled.Sign() < 0
	scaled.Abs(scaled)
	floor := new(big.Int).Quo(scaled.Num(), scaled.Denom())
	rem := ratSub(scaled, new(big.Rat).SetInt(floor))
	d := ratSub(rem, frac(1, 2))
	d.Abs(d)
	ambiguous := d.Cmp(frac(1, 1_000_000)) < 0
	if rem.Cmp(frac(1, 2)) >= 0 {
		floor.Add(floor, big.NewInt(1))
	}
	out := ratMul(new(big.Rat).SetInt(floor), unit(dp))
	if neg {
		out.Neg(out)
	}
	return out, !ambiguous
}

// decimal writes v with exactly dp decimal places (v already rounded).
func decimal(v *big.Rat, dp int) string {
	return v.FloatString(dp)
}

// number writes a rational the short way: an integer, or a decimal with as
// few places as it needs up to dp.
func number(v *big.Rat, dp int) string {
	if v.IsInt() {
		return v.Num().String()
	}
	s := v.FloatString(dp)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// intProblem is a question whose answer is the integer want; decoys are the
// mistakes worth refusing (off by one is always among them).
func intProblem(q string, want int, decoys ...int) problem {
	p := problem{question: q + " " + askNumber, answer: strconv.Itoa(want), check: numberCheck(rat(want), new(big.Rat))}
	for _, d := range append(decoys, want-1, want+1) {
		if d != want {
			p.decoys = append(p.decoys, strconv.Itoa(d))
		}
	}
	return p
}

// decimalProblem is a question asking for v to dp places; it refuses (ok
// false) a v on a rounding half. The answer is read within half a unit of
// the rounded value, so the neighbours one unit away are the decoys.
func decimalProblem(q string, v *big.Rat, dp int, decoys ...*big.Rat) (problem, bool) {
	r, ok := round(v, dp)
	if !ok {
		return problem{}, false
	}
	p := problem{question: q + " " + askNumber, answer: decimal(r, dp), check: numberCheck(r, halfUnit(dp))}
	for _, d := range append(decoys, ratSub(r, unit(dp)), ratAdd(r, unit(dp))) {
		dr, _ := round(d, dp)
		if dr.Cmp(r) != 0 {
			p.decoys = append(p.decoys, decimal(dr, dp))
		}
	}
	return p, true
}

// moneyProblem asks for an amount in cents and reads it to the cent.
func moneyProblem(q string, cents int, decoys ...int) problem {
	p := problem{question: q + " " + askFor("<amount>"), answer: money(cents),
		check: numberCheck(frac(cents, 100), new(big.Rat))}
	for _, d := range append(decoys, cents-1, cents+1, cents+100) {
		if d != cents && d >= 0 {
			p.decoys = append(p.decoys, money(d))
		}
	}
	return p
}

// an is the indefinite article for a word or a numeral that starts the
// phrase: "an apple", "an 8-litre jug", "an 18% solution", "a 1-litre jug".
func an(word string) string {
	w := strings.ToLower(word)
	digits := len(w) - len(strings.TrimLeft(w, "0123456789"))
	switch {
	case w == "":
		return "a"
	case digits > 0 && w[0] == '8':
		return "an " + word // eight, eighty, eight hundred
	case digits > 0 && (strings.HasPrefix(w, "11") || strings.HasPrefix(w, "18")) && (digits == 2 || digits == 5):
		return "an " + word // eleven, eighteen, eleven thousand
	case digits == 0 && strings.ContainsRune("aeio", rune(w[0])):
		return "an " + word
	}
	return "a " + word
}

// plural writes a count and its noun: "1 hour", "3 hours".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func gcd(a, b int) int {
	if a < 0 {
		a = -a
	}
	if b < 0 {
		b = -b
	}
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func lcm(a, b int) int { return a / gcd(a, b) * b }

func binom(n, k int) int {
	if k < 0 || k > n {
		return 0
	}
	r := 1
	for i := 1; i <= k; i++ {
		r = r * (n - k + i) / i
	}
	return r
}

// people are the names puzzles use: short, distinct, and no English word.
var people = []string{"Ada", "Bram", "Cleo", "Dov", "Esme", "Finn", "Greta", "Hugo", "Ines", "Jonas"}
