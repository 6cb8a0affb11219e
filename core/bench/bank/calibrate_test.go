package bank

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBandsAreTheCertificationDesigns(t *testing.T) {
	t.Parallel()
	require.Equal(t, Band{0.85, 0.95}, BandOf(Light))
	require.Equal(t, Band{0.50, 0.70}, BandOf(Medium))
	require.Equal(t, Band{0.15, 0.40}, BandOf(Hard))
	require.Equal(t, Band{}, BandOf("deep"))
	require.True(t, BandOf(Medium).Contains(0.5))
	require.True(t, BandOf(Medium).Contains(0.7))
	require.False(t, BandOf(Medium).Contains(0.71))
}

// TestCalibrateReportsPassRatesAgainstTheBands: answers are checked
// against their items; each bucket and each family in it gets its pass
// rate, a Wilson interval and a flag when outside its bucket's band —
// clear when the interval is outside too. Open items and other versions
// are counted, not checked; an unknown item of this version is an error.
func TestCalibrateReportsPassRatesAgainstTheBands(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	var answers []Graded
	answer := func(it Item, right bool) {
		a := "Answer: " + it.Answer
		if !right {
			a = "Answer: " + it.decoys[0]
		}
		answers = append(answers, Graded{QuestionID: it.ID, Answer: a})
	}
	byFamily := func(b Bucket, family string) []Item {
		var out []Item
		for _, it := range tb.pool[b] {
			if it.Family == family {
				out = append(out, it)
			}
		}
		require.Len(t, out, PerFamily)
		return out
	}
	// Light: knights all right (high: 8 of 8), date-add 7 of 8 (inside).
	for _, it := range byFamily(Light, "knights") {
		answer(it, true)
	}
	for i, it := range byFamily(Light, "date-add") {
		answer(it, i != 0)
	}
	// Hard: knights wrong every time, three times over: 0 of 24, clearly
	// under a band from 15% (0 of 16 would not be: its interval reaches
	// 19%).
	for range 3 {
		for _, it := range byFamily(Hard, "knights") {
			answer(it, false)
		}
	}
	// Medium: coins 4 of 8 (inside, at the band's edge).
	for i, it := range byFamily(Medium, "coins") {
		answer(it, i%2 == 0)
	}
	for _, it := range tb.pool[Medium] {
		if it.Kind == Open {
			answers = append(answers, Graded{QuestionID: it.ID, Answer: "It depends."})
			break
		}
	}
	answers = append(answers, Graded{QuestionID: "v0/light/knights/0", Answer: "Answer: Knights: none."})

	c, err := Calibrate(answers)
	require.NoError(t, err)
	require.Equal(t, Version, c.Version)
	require.Equal(t, 1, c.Open)
	require.Equal(t, 1, c.OtherVersion)

	require.Len(t, c.Buckets, 3)
	light, medium, hard := c.Buckets[0], c.Buckets[1], c.Buckets[2]
	require.Equal(t, PassRate{Bucket: Light, N: 16, Passed: 15, Rate: 15.0 / 16, CILo: light.CILo, CIHi: light.CIHi, Band: BandOf(Light)}, light)
	require.Equal(t, Medium, medium.Bucket)
	require.Equal(t, 0.5, medium.Rate)
	require.Empty(t, medium.Flag, "the band's ends are inside")
	require.Equal(t, 24, hard.N)
	require.Zero(t, hard.Passed)
	require.Equal(t, "low", hard.Flag)
	require.True(t, hard.Clear, "0 of 24: the interval's top (%.3f) is under 15%%", hard.CIHi)

	fams := map[string]PassRate{}
	for _, f := range c.Families {
		fams[string(f.Bucket)+"/"+f.Family] = f
	}
	require.Len(t, fams, 4)
	require.Equal(t, "high", fams["light/knights"].Flag, "8 of 8 is over 95%")
	require.False(t, fams["light/knights"].Clear, "8 of 8 does not rule out 95%%: %.3f", fams["light/knights"].CILo)
	require.Empty(t, fams["light/date-add"].Flag)
	require.Equal(t, "low", fams["hard/knights"].Flag)
	require.Equal(t, []string{"light", "light", "medium", "hard"}, []string{string(c.Families[0].Bucket), string(c.Families[1].Bucket), string(c.Families[2].Bucket), string(c.Families[3].Bucket)})
	require.Equal(t, "date-add", c.Families[0].Family, "by name within a bucket")

	// The Wilson interval holds the rate and narrows with n.
	lo, hi := wilson(15, 16)
	require.Less(t, lo, 15.0/16)
	require.Greater(t, hi, 15.0/16)
	lo2, hi2 := wilson(150, 160)
	require.Greater(t, lo2, lo)
	require.Less(t, hi2-lo2, hi-lo)
	require.InDelta(t, 0.0, func() float64 { l, _ := wilson(0, 16); return l }(), 1e-12)

	_, err = Calibrate([]Graded{{QuestionID: Version + "/light/knights/99", Answer: "x"}})
	require.ErrorIs(t, err, ErrUnknownItem)
}
