package draw

import (
	"bytes"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// dollars formats micro-USD the way the dashboard does, e.g. "$1.23".
func dollars(v int64) string {
	return "$" + strconv.FormatFloat(float64(v)/1e6, 'f', 2, 64)
}

// monthOfSpend is a 30-day chart with two series.
func monthOfSpend() *Bars {
	b := &Bars{
		ID:     "spend",
		Title:  "Spend per day",
		Desc:   "Spend per day over 30 days, split between two providers.",
		Format: dollars,
		Series: []Series{{Label: "openai"}, {Label: "anthropic"}},
	}
	for d := 0; d < 30; d++ {
		b.Labels = append(b.Labels, strconv.Itoa(d+1)+" Nov")
		b.Series[0].Values = append(b.Series[0].Values, int64(1_000_000+(d*37%11)*250_000))
		b.Series[1].Values = append(b.Series[1].Values, int64((d*53%7)*400_000))
	}
	return b
}

// hostileBars puts markup-like text everywhere a caller's text can go.
func hostileBars() *Bars {
	return &Bars{
		ID:     `x"><script>`,
		Title:  `Spend <script>&"`,
		Desc:   `A chart whose labels contain <script>alert("x")</script> & 'quotes'.`,
		Labels: []string{`<script>&"`, `a&b`, "ctl\x00\x1b"},
		Series: []Series{{Label: `<b onmouseover="x">`, Values: []int64{3, 1, 2}}},
	}
}

// panel is a three-round deliberation: a classifier, three seats per round
// (one with a hedge pair, one cut at quorum), a failed call, a judge per
// round and a synthesis.
func panel() *Timeline {
	ms := time.Millisecond
	tl := &Timeline{
		ID:    "run-42",
		Title: "Deliberation timeline",
		Desc:  "Three rounds of three seats, judged after each round, then synthesised; 7.4 seconds in all.",
		Rows:  []Row{{Label: "Classifier", Spans: []Span{{Label: "small-x", Start: 0, End: 180 * ms, Outcome: "answered", Detail: "212 tokens in · 8 out · $0.0001 · 0.2 s"}}}},
	}
	for r := 0; r < 3; r++ {
		base := time.Duration(200+r*2300) * ms
		round := "Round " + strconv.Itoa(r+1)
		tl.Rows = append(tl.Rows,
			Row{Label: round + " · seat-1", Spans: []Span{
				{Label: "gpt-x", Start: base, End: base + 900*ms, Outcome: "answered", Detail: "1,204 tokens in · 310 out · $0.0042 · 0.9 s"},
			}},
			Row{Label: round + " · seat-2", Spans: []Span{
				{Label: "claude-y", Start: base, End: base + 1500*ms, Outcome: "cancelled", Detail: "lost the hedge race"},
				{Label: "claude-y (hedge)", Start: base + 400*ms, End: base + 1100*ms, Outcome: "won", Detail: "1,204 tokens in · 295 out · $0.0038 · 0.7 s"},
			}},
			Row{Label: round + " · seat-3 with a very long model name", Spans: []Span{
				{Label: "slow-z", Start: base, End: base + 1600*ms, Outcome: "cut", Detail: "cut at quorum"},
			}},
			Row{Label: "Judge · round " + strconv.Itoa(r+1), Spans: []Span{
				{Label: "judge-j", Start: base + 1600*ms, End: base + 2200*ms, Outcome: "answered"},
			}},
		)
		tl.Marks = append(tl.Marks, Mark{At: base + 1500*ms, Label: "quorum " + strconv.Itoa(r+1)})
	}
	tl.Rows[1].Spans = append(tl.Rows[1].Spans, Span{Label: "gpt-x (backup)", Start: 205 * ms, End: 205 * ms, Outcome: "failed", Detail: "HTTP 502"})
	tl.Rows = append(tl.Rows, Row{Label: "Synthesis", Spans: []Span{{Label: "gpt-x", Start: 6900 * ms, End: 7400 * ms, Outcome: "answered"}}})
	return tl
}

// charts are the golden cases, by file name.
var charts = []struct {
	name string
	svg  func() string
}{
	{"bars_30_days", func() string { return string(monthOfSpend().SVG()) }},
	{"bars_empty", func() string {
		return string((&Bars{ID: "empty", Title: "Spend per day", Desc: "No spend yet.", Labels: []string{"1 Nov"}}).SVG())
	}},
	{"bars_hostile", func() string { return string(hostileBars().SVG()) }},
	{"timeline_panel", func() string { return string(panel().SVG()) }},
	{"timeline_empty", func() string {
		return string((&Timeline{ID: "none", Title: "Deliberation timeline", Desc: "Nothing ran."}).SVG())
	}},
}

func TestGolden(t *testing.T) {
	for _, c := range charts {
		t.Run(c.name, func(t *testing.T) {
			got := c.svg()
			path := filepath.Join("testdata", c.name+".svg")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./api/web/draw -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s; if the change is intended, run go test ./api/web/draw -update", path)
			}
		})
	}
}

func TestOutputIsDeterministic(t *testing.T) {
	for _, c := range charts {
		if a, b := c.svg(), c.svg(); a != b {
			t.Errorf("%s: two renderings differ", c.name)
		}
	}
}

// element is a parsed XML element, kept flat in document order.
type element struct {
	name  string
	attrs map[string]string
	text  string // character data directly inside the element
}

// parseSVG checks that s is well-formed XML and returns its elements.
func parseSVG(t *testing.T, s string) []*element {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(s))
	dec.Strict = true
	var out, stack []*element
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := &element{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			out, stack = append(out, e), append(stack, e)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += string(tok)
			}
		}
	}
	if len(out) == 0 || out[0].name != "svg" {
		t.Fatalf("output is not an <svg> element")
	}
	return out
}

func TestOutputIsSafeAndAccessible(t *testing.T) {
	for _, c := range charts {
		t.Run(c.name, func(t *testing.T) {
			s := c.svg()
			if strings.Contains(strings.ToLower(s), "<script") {
				t.Error("output contains <script")
			}
			if strings.Contains(s, " style=") {
				t.Error("output contains a style attribute")
			}
			els := parseSVG(t, s)
			ids := map[string]bool{}
			for _, e := range els {
				for k := range e.attrs {
					if strings.HasPrefix(strings.ToLower(k), "on") {
						t.Errorf("<%s> has an event handler attribute %q", e.name, k)
					}
				}
				if id, ok := e.attrs["id"]; ok {
					if ids[id] {
						t.Errorf("id %q is used twice", id)
					}
					ids[id] = true
				}
			}
			root := els[0]
			if root.attrs["role"] != "img" {
				t.Errorf("role = %q, want img", root.attrs["role"])
			}
			refs := strings.Fields(root.attrs["aria-labelledby"])
			if len(refs) != 2 {
				t.Fatalf("aria-labelledby = %q, want a title and a desc id", root.attrs["aria-labelledby"])
			}
			for _, ref := range refs {
				if !ids[ref] {
					t.Errorf("aria-labelledby refers to missing id %q", ref)
				}
			}
			if root.attrs["width"] != "100%" || root.attrs["viewBox"] == "" || root.attrs["preserveAspectRatio"] == "" {
				t.Errorf("svg does not scale: %v", root.attrs)
			}
			for _, e := range els {
				if fs, ok := e.attrs["font-size"]; ok {
					if v, _ := strconv.ParseFloat(fs, 64); v < 11 {
						t.Errorf("<%s> has font-size %s, below 11", e.name, fs)
					}
				}
			}
		})
	}
}

func TestTwoChartsHaveDistinctIDs(t *testing.T) {
	a := parseSVG(t, string(monthOfSpend().SVG()))
	other := monthOfSpend()
	other.ID = "tokens"
	b := parseSVG(t, string(other.SVG()))
	seen := map[string]bool{}
	for _, e := range a {
		if id := e.attrs["id"]; id != "" {
			seen[id] = true
		}
	}
	for _, e := range b {
		if id := e.attrs["id"]; id != "" && seen[id] {
			t.Errorf("id %q appears in both charts", id)
		}
	}
}

func TestHostileTextIsEscaped(t *testing.T) {
	s := string(hostileBars().SVG())
	els := parseSVG(t, s)
	var texts []string
	for _, e := range els {
		texts = append(texts, e.text)
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{`Spend <script>&"`, `<script>&"`, `a&b`, `<b onmouseover="x">`} {
		if !strings.Contains(all, want) {
			t.Errorf("text %q is not shown literally", want)
		}
	}
	if strings.Contains(s, "\x00") || strings.Contains(s, "\x1b") {
		t.Error("control characters reached the output")
	}
	if id := els[0].attrs["aria-labelledby"]; !regexp.MustCompile(`^[A-Za-z][\w-]*-title [A-Za-z][\w-]*-desc$`).MatchString(id) {
		t.Errorf("aria-labelledby = %q, not made of safe ids", id)
	}
}

// seriesRects returns the height of each rectangle of series class "sN"
// inside the plot, keyed by its tooltip.
func seriesRects(t *testing.T, els []*element, class string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for i, e := range els {
		if e.name != "rect" || !strings.HasPrefix(e.attrs["class"], class+" ") {
			continue
		}
		if i+1 >= len(els) || els[i+1].name != "title" {
			t.Fatalf("bar rect without a <title>")
		}
		h, err := strconv.ParseFloat(e.attrs["height"], 64)
		if err != nil {
			t.Fatal(err)
		}
		out[els[i+1].text] = h
	}
	return out
}

func TestBarHeightsAreProportional(t *testing.T) {
	b := &Bars{
		ID:     "p",
		Labels: []string{"a", "b", "c"},
		Series: []Series{{Label: "x", Values: []int64{100, 300, 40}}, {Label: "y", Values: []int64{50, 0, 10}}},
	}
	h := seriesRects(t, parseSVG(t, string(b.SVG())), "s0")
	ha, hb, hc := h["a · x: 100"], h["b · x: 300"], h["c · x: 40"]
	if ha == 0 || hb == 0 || hc == 0 {
		t.Fatalf("missing bars: %v", h)
	}
	if math.Abs(hb/ha-3) > 0.01 || math.Abs(hc/ha-0.4) > 0.01 {
		t.Errorf("heights %v, %v, %v are not in proportion 100:300:40", ha, hb, hc)
	}
	// 300 is the tallest stack and already a nice number, so the plot's
	// full height (220) stands for 300 and 100 is drawn 73.3 high.
	if ha != 73.3 {
		t.Errorf("height for 100 = %v, want 73.3 on a 0–300 axis", ha)
	}
	if y := seriesRects(t, parseSVG(t, string(b.SVG())), "s1"); len(y) != 2 {
		t.Errorf("want 2 rects for series y (the zero is skipped), got %d", len(y))
	}
}

func TestEmptyChartsSayNoData(t *testing.T) {
	for _, b := range []*Bars{{}, {Labels: []string{"1 Nov", "2 Nov"}, Series: []Series{{Label: "a", Values: []int64{0, 0}}}}} {
		s := string(b.SVG())
		if !strings.Contains(s, ">No data</text>") || strings.Contains(s, "NaN") || strings.Contains(s, "Inf") {
			t.Errorf("empty bars: %s", s)
		}
	}
	s := string((&Timeline{Rows: []Row{{Label: "Classifier"}}}).SVG())
	if !strings.Contains(s, ">No data</text>") || strings.Contains(s, "NaN") {
		t.Errorf("empty timeline: %s", s)
	}
}

func TestNiceScale(t *testing.T) {
	cases := []struct {
		peak      int64
		step      int64
		gridlines int
	}{
		{0, 1, 3}, {1, 1, 3}, {4, 1, 4}, {7, 2, 4}, {10, 2, 5}, {11, 5, 3},
		{100, 20, 5}, {101, 50, 3}, {350, 100, 4}, {999, 200, 5}, {1000, 200, 5},
		{4_300_000, 1_000_000, 5}, {math.MaxInt64, 2_000_000_000_000_000_000, 5},
	}
	for _, c := range cases {
		step, n := niceScale(c.peak)
		if step != c.step || n != c.gridlines {
			t.Errorf("niceScale(%d) = %d, %d; want %d, %d", c.peak, step, n, c.step, c.gridlines)
		}
		if c.peak > 0 && float64(step)*float64(n) < float64(c.peak) {
			t.Errorf("niceScale(%d): axis top %d×%d is below the peak", c.peak, step, n)
		}
	}
}

func TestTimeTicks(t *testing.T) {
	cases := []struct {
		total time.Duration
		want  []string
	}{
		{3200 * time.Millisecond, []string{"0 s", "0.5 s", "1 s", "1.5 s", "2 s", "2.5 s", "3 s"}},
		{180 * time.Millisecond, []string{"0 ms", "50 ms", "100 ms", "150 ms"}},
		{7400 * time.Millisecond, []string{"0 s", "1 s", "2 s", "3 s", "4 s", "5 s", "6 s", "7 s"}},
		{700 * time.Millisecond, []string{"0 s", "0.1 s", "0.2 s", "0.3 s", "0.4 s", "0.5 s", "0.6 s", "0.7 s"}},
		{45 * time.Second, []string{"0 s", "10 s", "20 s", "30 s", "40 s"}},
	}
	for _, c := range cases {
		step := timeStep(c.total)
		var got []string
		for at := time.Duration(0); at <= c.total; at += step {
			got = append(got, tickLabel(at, step))
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("ticks for %v = %v, want %v", c.total, got, c.want)
		}
	}
}

// spanRects returns the outcome rectangles of a timeline (not legend
// swatches), keyed by the tooltip of the group around each.
func spanRects(els []*element) map[string]*element {
	out := map[string]*element{}
	for i := 0; i+2 < len(els); i++ {
		if els[i].name == "g" && els[i+1].name == "title" && els[i+2].name == "rect" {
			out[els[i+1].text] = els[i+2]
		}
	}
	return out
}

// findRect returns the span rectangle whose tooltip starts with prefix.
func findRect(t *testing.T, rects map[string]*element, prefix string) *element {
	t.Helper()
	for tip, r := range rects {
		if strings.HasPrefix(tip, prefix) {
			return r
		}
	}
	t.Fatalf("no span whose tooltip starts %q", prefix)
	return nil
}

// attrFloat parses a numeric attribute.
func attrFloat(t *testing.T, e *element, name string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(e.attrs[name], 64)
	if err != nil {
		t.Fatalf("<%s %s=%q>: %v", e.name, name, e.attrs[name], err)
	}
	return v
}

func TestTimelineStacksOverlappingSpans(t *testing.T) {
	rects := spanRects(parseSVG(t, string(panel().SVG())))
	primary := findRect(t, rects, "claude-y · cancelled · 200 ms")
	hedge := findRect(t, rects, "claude-y (hedge) · won · 600 ms")
	y1, y2 := attrFloat(t, primary, "y"), attrFloat(t, hedge, "y")
	if y2-y1 < attrFloat(t, primary, "height") {
		t.Errorf("overlapping spans share a lane: y %v and %v", y1, y2)
	}
	// The failed call starts after the primary seat-1 call but overlaps
	// it, so it too needs a lane of its own.
	seat1 := findRect(t, rects, "gpt-x · answered · 200 ms")
	failed := findRect(t, rects, "gpt-x (backup) · failed")
	if attrFloat(t, seat1, "y") == attrFloat(t, failed, "y") {
		t.Error("the failed call is drawn over the seat-1 call")
	}
}

func TestTimelineSpanDetails(t *testing.T) {
	s := string(panel().SVG())
	rects := spanRects(parseSVG(t, s))
	failed := findRect(t, rects, "gpt-x (backup) · failed · 205 ms to 205 ms · HTTP 502")
	if w := attrFloat(t, failed, "width"); w != tlMinSpanW {
		t.Errorf("zero-length span width = %v, want the minimum %v", w, tlMinSpanW)
	}
	for prefix, dash := range map[string]string{"slow-z · cut": "4 2", "claude-y · cancelled": "1 2", "gpt-x (backup) · failed": "6 2 1 2"} {
		if got := findRect(t, rects, prefix).attrs["stroke-dasharray"]; got != dash {
			t.Errorf("%s: stroke-dasharray = %q, want %q", prefix, got, dash)
		}
	}
	if !strings.Contains(s, `fill="url(#run-42-hatch)"`) || !strings.Contains(s, `<pattern id="run-42-hatch"`) {
		t.Error("failed spans are not hatched with the chart's own pattern")
	}
	if !strings.Contains(s, "<title>Round 1 · seat-3 with a very long model name</title>Round 1 · seat-3 with a ver…</text>") {
		t.Error("long row label is not cut with … and given its full text as a title")
	}
	for _, word := range []string{">Won<", ">Answered<", ">Cut at quorum<", ">Cancelled<", ">Failed<", ">quorum 1<"} {
		if !strings.Contains(s, word) {
			t.Errorf("legend or marks lack %s", word)
		}
	}
}

func TestTimelineGrowsWithRows(t *testing.T) {
	height := func(rows int) float64 {
		tl := &Timeline{ID: "h"}
		for i := 0; i < rows; i++ {
			tl.Rows = append(tl.Rows, Row{Label: "r", Spans: []Span{{Start: 0, End: time.Second, Outcome: "won"}}})
		}
		vb := strings.Fields(parseSVG(t, string(tl.SVG()))[0].attrs["viewBox"])
		h, _ := strconv.ParseFloat(vb[3], 64)
		return h
	}
	if h2, h10 := height(2), height(10); h10 <= h2 {
		t.Errorf("10 rows are %v high, 2 rows %v", h10, h2)
	}
}

// contrast is the WCAG contrast ratio between two "#rrggbb" colours.
func contrast(a, b string) float64 {
	lum := func(hex string) float64 {
		var c [3]float64
		for i := range c {
			v, _ := strconv.ParseUint(hex[1+2*i:3+2*i], 16, 8)
			s := float64(v) / 255
			if s <= 0.03928 {
				c[i] = s / 12.92
			} else {
				c[i] = math.Pow((s+0.055)/1.055, 2.4)
			}
		}
		return 0.2126*c[0] + 0.7152*c[1] + 0.0722*c[2]
	}
	la, lb := lum(a), lum(b)
	return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)
}

func TestCSSColoursHaveEnoughContrast(t *testing.T) {
	light, dark, ok := strings.Cut(CSS, "@media (prefers-color-scheme: dark)")
	if !ok {
		t.Fatal("CSS has no dark variant")
	}
	rule := regexp.MustCompile(`\.chart \.([\w-]+) \{([^}]*)\}`)
	colour := regexp.MustCompile(`(?:fill|stroke): (#[0-9a-f]{6})`)
	need := map[string]float64{"label": 4.5, "mark-label": 4.5}
	classes := []string{"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "axis", "label", "mark", "mark-label", "won", "answered", "cut", "cancelled", "failed"}
	for _, scheme := range []struct{ css, bg string }{{light, "#ffffff"}, {dark, "#14171f"}} {
		found := map[string]bool{}
		for _, m := range rule.FindAllStringSubmatch(scheme.css, -1) {
			class := m[1]
			min := need[class]
			if min == 0 {
				min = 3
			}
			for _, c := range colour.FindAllStringSubmatch(m[2], -1) {
				found[class] = true
				if class == "grid" || class == "seg" || class == "hatch" {
					continue // decorative: gridlines and separators
				}
				if r := contrast(c[1], scheme.bg); r < min {
					t.Errorf("%s on %s: .%s %s has contrast %.2f, want ≥ %.1f", scheme.bg, scheme.bg, class, c[1], r, min)
				}
			}
		}
		for _, c := range classes {
			if !found[c] {
				t.Errorf("background %s: no colour for .%s", scheme.bg, c)
			}
		}
	}
}

func TestFoldSeriesKeepsTotals(t *testing.T) {
	var in []Series
	for i := 0; i < 10; i++ {
		in = append(in, Series{Label: strconv.Itoa(i), Values: []int64{1, int64(i)}})
	}
	out := foldSeries(in)
	if len(out) != MaxSeries || out[MaxSeries-1].Label != "Other" {
		t.Fatalf("folded to %d series, last %q", len(out), out[len(out)-1].Label)
	}
	if got := out[MaxSeries-1].Values; got[0] != 3 || got[1] != 7+8+9 {
		t.Errorf("Other = %v, want [3 24]", got)
	}
	if !bytes.Equal([]byte(fmt.Sprint(barTotals(out, 2))), []byte(fmt.Sprint(barTotals(in, 2)))) {
		t.Error("folding changed the bar totals")
	}
}
