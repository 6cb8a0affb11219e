package draw

import (
	"math"
	"strings"
	"testing"
)

// certification is a certification's W with its interval, per bucket and
// per judge, against the verdict's thresholds.
func certification() *Interval {
	return &Interval{
		ID:    "cert",
		Title: "Win rate W with its 95% interval",
		Desc:  "W is 0.58 (0.52 to 0.64), above the certify threshold 0.50.",
		Rows: []IntervalRow{
			{Label: "All questions", Value: 0.58, Lower: 0.52, Upper: 0.64},
			{Label: "Light", Value: 0.55, Lower: 0.44, Upper: 0.66},
			{Label: "Medium", Value: 0.6, Lower: 0.49, Upper: 0.71},
			{Label: "Hard", Value: 0.59, Lower: 0.47, Upper: 0.7},
			{Label: "A judge with a very long name indeed", Value: 0.62, Lower: math.NaN(), Upper: math.NaN()},
			{Label: "Undefined", Value: math.NaN(), Lower: math.NaN(), Upper: math.NaN()},
		},
		Marks: []Threshold{{Label: "provisional ≥", At: 0.45}, {Label: "certified ≥", At: 0.5}},
	}
}

var intervals = []struct {
	name string
	svg  func() string
}{
	{"interval_certification", func() string { return string(certification().SVG()) }},
	{"interval_empty", func() string {
		return string((&Interval{ID: "none", Title: "Win rate", Desc: "Nothing scored."}).SVG())
	}},
	{"interval_hostile", func() string {
		return string((&Interval{ID: `x"><script>`, Title: `W <script>&"`, Desc: `<b onclick="x">`,
			Rows:  []IntervalRow{{Label: `<script>alert(1)</script>`, Value: 2, Lower: -1, Upper: 3}},
			Marks: []Threshold{{Label: `"><script>`, At: 0.5}}}).SVG())
	}},
}

// The intervals are checked against their golden files with the other
// charts (TestGolden).
func init() { charts = append(charts, intervals...) }

// The chart is well-formed, safe and named: no script, style or handler,
// its title and description referenced, every estimate's figures in a
// tooltip, and values off the scale clamped onto it.
func TestIntervalIsSafeAndAccessible(t *testing.T) {
	for _, c := range intervals {
		t.Run(c.name, func(t *testing.T) {
			s := c.svg()
			if strings.Contains(strings.ToLower(s), "<script") || strings.Contains(s, " style=") {
				t.Fatal("output contains script or a style attribute")
			}
			els := parseSVG(t, s)
			if els[0].attrs["role"] != "img" || els[0].attrs["aria-labelledby"] == "" {
				t.Errorf("the <svg> is not a named image: %v", els[0].attrs)
			}
			for _, e := range els {
				for k := range e.attrs {
					if strings.HasPrefix(strings.ToLower(k), "on") {
						t.Errorf("<%s> has an event handler %q", e.name, k)
					}
				}
				if x, ok := e.attrs["cx"]; ok && (strings.HasPrefix(x, "-") || len(x) > 5) {
					t.Errorf("a dot is off the scale at %s", x)
				}
			}
		})
	}
	s := string(certification().SVG())
	for _, want := range []string{"All questions: 0.58, 95% interval 0.52 to 0.64", "not defined", "certified ≥ 0.50", "A judge with a very…"} {
		if !strings.Contains(s, want) {
			t.Errorf("the chart lacks %q", want)
		}
	}
}
