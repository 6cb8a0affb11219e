package genie

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNumeralsSkipDatesAndNames(t *testing.T) {
	t.Parallel()
	text := "On 28 Nov 2026 at 14:05 UTC (2026-11-28T14:05:00Z) the v2 run of llama4_maverick passed g3: " +
		"W was 0.58, 58% of $1,204.50 and 12 questions, .5 of them; req_7f3a aside. Nov 2026 and March 3 too."
	var got []string
	for _, n := range Numerals(text) {
		got = append(got, n.Text)
	}
	require.Equal(t, []string{"0.58", "58%", "$1,204.50", "12", ".5"}, got)
	ns := Numerals("$1,204.50 and 58%")
	require.Equal(t, Numeral{Text: "$1,204.50", Value: 1204.5, Decimals: 2}, ns[0])
	require.Equal(t, Numeral{Text: "58%", Value: 58, Percent: true}, ns[1])
}

func TestFactValuesWalkTheFacts(t *testing.T) {
	t.Parallel()
	facts := map[string]any{"w": 0.5812, "buckets": []any{map[string]any{"n": 50, "lower": -0.37}}, "verdict": "provisional",
		"price_usd": 1204.5}
	require.ElementsMatch(t, []float64{0.5812, 50, -0.37, 1204.5}, FactValues(facts))
}

// A figure is supported when a fact, rounded as the figure is written, is
// it — a percentage reading a fraction too; any other figure is reported
// with its sentence, and Strip drops exactly those sentences.
func TestTheGuardFindsAndStripsInventedFigures(t *testing.T) {
	t.Parallel()
	facts := FactValues(map[string]any{"w": 0.5812, "lower": 0.5204, "upper": 0.6391, "n": 150, "cost_usd": 50,
		"bucket_lower": -0.37})
	answer := "W is 0.58, that is 58%, with a 95% interval of 0.52 to 0.64 over 150 questions. " +
		"Certifying costs $50.00 and would take 3 hours. The light bucket's lower bound is −0.37.\n" +
		"Its tie rate was 12%! Run it on 28 Nov 2026."
	un := Check(answer, facts)
	var bad []string
	for _, u := range un {
		bad = append(bad, u.Numeral.Text)
	}
	require.Equal(t, []string{"95%", "3", "12%"}, bad, "95% is not a fact here, nor 3 hours, nor a tie rate")
	require.Equal(t, "Certifying costs $50.00 and would take 3 hours.", un[1].Sentence)

	stripped, removed := Strip(answer, append(facts, 95))
	require.Equal(t, 2, removed)
	require.Equal(t, "W is 0.58, that is 58%, with a 95% interval of 0.52 to 0.64 over 150 questions. "+
		"The light bucket's lower bound is −0.37.\nRun it on 28 Nov 2026.", stripped)
	require.Empty(t, Check(stripped, append(facts, 95)))
	clean, removed := Strip("No figure here. None at all.", nil)
	require.Zero(t, removed)
	require.Equal(t, "No figure here. None at all.", clean)
}
