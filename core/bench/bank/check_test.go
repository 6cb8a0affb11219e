package bank

import (
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func ratOf(s string) (*big.Rat, bool) { return new(big.Rat).SetString(s) }

func TestNumberCheckReadsTheFinalNumber(t *testing.T) {
	t.Parallel()
	cases := []struct {
		text string
		want string // a rational, as big.Rat reads it
		ok   bool
	}{
		{"The total is $1,234.50.", "1234.5", true},
		{"Answer: -12", "-12", true},
		{"Answer: −12", "-12", true},
		{"Answer: 12", "-12", false},
		{"**Answer:** 5/36 ≈ 0.139", "5/36", true},
		{"Answer: 0.1389", "5/36", true},
		{"Answer: 0.14", "5/36", false},
		{"So we get $\\boxed{42}$.", "42", true},
		{"6 × 7 = 42", "42", true},
		{"The answer is 42 km, that is 42,000 m.", "42", true},
		{"Answer: 12.5%", "12.5", true},
		{"From 3 to 10 there are 7 steps, but counting both ends gives 8.\n\nFinal answer = 7", "7", true},
		{"Between 2020-2024 it rose.", "-2024", false},
		{"no digits here", "0", false},
	}
	for _, c := range cases {
		want, ok := ratOf(c.want)
		require.True(t, ok, c.want)
		tol := frac(1, 2000)
		if want.IsInt() {
			tol = rat(0)
		}
		require.Equal(t, c.ok, numberCheck(want, tol)(c.text), c.text)
	}
}

func TestChoiceCheckReadsTheFinalName(t *testing.T) {
	t.Parallel()
	check := choiceCheck([]string{"Ada", "Bram", "Cleo"}, "Cleo")
	for text, ok := range map[string]bool{
		"Answer: Cleo":                                   true,
		"**Answer**: Cleo keeps the parrot.":             true,
		"Bram cannot, Ada cannot, so it must be cleo.":   true,
		"It is not Cleo.\n\nAnswer: Bram":                false,
		"Answer: Ada":                                    false,
		"I think it is Cleo.\n\nFinal answer: Cleo.":     true,
		"Nobody can tell from these clues.":              false,
		"Answer: Cleopatra":                              false,
		"Ada and Bram are ruled out.\nAnswer:\n\nCleo\n": true,
	} {
		require.Equal(t, ok, check(text), text)
	}
}

func TestDateCheckReadsEveryCommonForm(t *testing.T) {
	t.Parallel()
	check := dateCheck(time.Date(2041, time.April, 24, 0, 0, 0, 0, time.UTC))
	for text, ok := range map[string]bool{
		"Answer: 2041-04-24":                                    true,
		"Answer: April 24, 2041":                                true,
		"Answer: Wednesday, 24th April 2041":                    true,
		"Answer: 24 Apr 2041":                                   true,
		"Answer: the 24th of April, 2041":                       true,
		"Counting on from 1 April 2041 we reach 24 April 2041.": true,
		"Answer: 25 April 2041":                                 false,
		"Answer: 24 April 2042":                                 false,
		"Answer: 31 April 2041":                                 false,
		// Day and month order is ambiguous; the question asks for words.
		"Answer: 24/04/2041": false,
	} {
		require.Equal(t, ok, check(text), text)
	}
}

func TestKnightsCheckReadsTheUsualPhrasings(t *testing.T) {
	t.Parallel()
	names := []string{"Ada", "Bram", "Cleo"}
	check := knightsCheck(names, map[string]bool{"Ada": true, "Cleo": true})
	for text, ok := range map[string]bool{
		"Answer: Knights: Ada, Cleo. Knaves: Bram.":                                              true,
		"Answer: Ada and Cleo are knights; Bram is a knave.":                                     true,
		"Answer: The knights are Ada and Cleo, and Bram is the knave.":                           true,
		"Answer: Ada (knight), Bram (knave), Cleo (knight)":                                      true,
		"Answer: Ada and Cleo":                                                                   true,
		"Answer: Ada is a knight, Bram is a knave, Cleo is a knight.":                            true,
		"Answer: Only Bram is a knave.":                                                          true,
		"Answer:\n- Ada: knight\n- Bram: knave\n- Cleo: knight\n\nSince Bram is a knight... no.": true,
		"Answer: Bram is lying; Ada and Cleo tell the truth.":                                    true,
		"Suppose Bram is a knight. Then...\nSo Ada and Cleo are knights and Bram is a knave.":    true,
		"Answer: Knights: Ada. Knaves: Bram, Cleo.":                                              false,
		"Answer: Ada, Bram and Cleo are all knights.":                                            false,
		"Answer: Ada is a knight; Bram is a knight; Cleo is a knave.":                            false,
		"Answer: Cleo is a knight.":                                                              false,
		"Answer: I can't tell.":                                                                  false,
		"Answer: Ada is a knight. Ada is a knave. Cleo is a knight.":                             false,
		"Answer: Neither Ada nor Cleo is a knight.":                                              false,
	} {
		require.Equal(t, ok, check(text), text)
	}
	none := knightsCheck(names, map[string]bool{})
	for text, ok := range map[string]bool{
		"Answer: Knights: none. Knaves: Ada, Bram, Cleo.": true,
		"Answer: All three are knaves.":                   true,
		"Answer: None of them is a knight.":               true,
		"Answer: none":                                    true,
		"Answer: Knights: Ada. Knaves: Bram, Cleo.":       false,
		"Answer: All three are knights.":                  false,
	} {
		require.Equal(t, ok, none(text), text)
	}
}

func TestRouteAndOrderChecks(t *testing.T) {
	t.Parallel()
	towns := []string{"Elstow", "Hythe", "Ashby", "Jarrow"}
	route := routeCheck(towns, []string{"Elstow", "Hythe", "Ashby"})
	for text, ok := range map[string]bool{
		"Answer: Elstow → Hythe → Ashby":                                              true,
		"Answer: Elstow -> Hythe -> Ashby (5 km, avoiding Jarrow)":                    true,
		"Answer: Elstow, Hythe, Ashby":                                                true,
		"Via Jarrow is longer.\nThe best route is Elstow to Hythe, then on to Ashby.": true,
		"Answer: Elstow → Ashby":                                                      false,
		"Answer: Elstow → Jarrow → Hythe → Ashby":                                     false,
		"Answer: Hythe → Ashby":                                                       false,
	} {
		require.Equal(t, ok, route(text), text)
	}
	order := orderCheck(towns, []string{"Jarrow", "Ashby", "Elstow", "Hythe"})
	for text, ok := range map[string]bool{
		"Answer: Jarrow, Ashby, Elstow, Hythe":              true,
		"Answer:\n1. Jarrow\n2. Ashby\n3. Elstow\n4. Hythe": true,
		"Answer: Jarrow, Ashby, Elstow, Hythe (Hythe last)": true,
		"Answer: Ashby, Jarrow, Elstow, Hythe":              false,
		"Answer: Jarrow, Ashby, Elstow":                     false,
	} {
		require.Equal(t, ok, order(text), text)
	}
}

func TestAnArticle(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"apple": "an apple", "pen": "a pen", "8": "an 8", "85%": "an 85%", "11": "an 11", "18%": "an 18%",
		"110": "a 110", "1": "a 1", "800": "an 800", "46%": "a 46%",
	} {
		require.Equal(t, want, an(in), in)
	}
}
