package draw

import (
	"html/template"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Layout of a timeline, in SVG user units.
const (
	tlLabelX    = 8.0   // x of the row labels
	tlLeft      = 204.0 // x of the time axis's zero
	tlRight     = 16.0  // space right of the plot
	tlLaneH     = 14.0  // height of one sub-lane's span
	tlLaneGap   = 3.0   // gap between sub-lanes of one row
	tlRowPad    = 6.0   // space above and below the lanes of a row
	tlMarksH    = 36.0  // band above the rows for mark labels, when there are marks
	tlTopPad    = 8.0   // space above the rows when there are no marks
	tlAxisH     = 28.0  // band under the rows for the time axis
	tlMaxLabel  = 28    // row labels longer than this are cut with "…"
	tlMinSpanW  = 2.0   // the narrowest a span is ever drawn
	tlMaxTicks  = 8     // time ticks are spaced so fewer than this many whole intervals fit
	tlSwatchW   = 16.0  // width of a legend swatch
	tlLegendPad = 18.0  // space between the axis labels and the legend
	tlEmptyH    = 60.0  // least height of the plot when there is nothing to draw
)

// Span is one provider call drawn on a timeline.
type Span struct {
	Label   string        // e.g. "gpt-x (backup)"
	Start   time.Duration // offset from the deliberation's start
	End     time.Duration
	Outcome string // "won", "answered", "cut" (cut at quorum), "cancelled" (lost a hedge race / cancelled), "failed"; anything else is drawn as "answered"
	Detail  string // tooltip text, e.g. "1,204 tokens in · 310 out · $0.0042 · 2.1 s"
}

// Row is one line of the timeline: a seat of a round, or a staff role.
type Row struct {
	Label string // e.g. "Round 1 · seat-2", "Classifier", "Judge · round 1", "Synthesis"
	Spans []Span // several spans on one row: primary and its backup/hedge
}

// Mark is a vertical line at a moment, e.g. "quorum reached" or "round 2".
type Mark struct {
	At    time.Duration
	Label string
}

// Timeline draws a deliberation: rows of spans on a shared time axis.
type Timeline struct {
	ID, Title, Desc string        // id prefix for title/desc ids, accessible name and summary
	Total           time.Duration // the axis end; if 0, the latest span end
	Rows            []Row
	Marks           []Mark
}

// outcome describes how one kind of call outcome is drawn. Outcomes that
// did not produce the answer are told apart by stroke dashes and a hatch
// pattern as well as by colour.
type outcome struct {
	key    string // Span.Outcome value and CSS class
	phrase string // words used in tooltips and the legend
	dash   string // stroke-dasharray, or "" for a solid outline
	hatch  bool   // whether the span is overlaid with a hatch pattern
}

// outcomes lists every outcome in legend order.
var outcomes = []outcome{
	{key: "won", phrase: "Won"},
	{key: "answered", phrase: "Answered"},
	{key: "cut", phrase: "Cut at quorum", dash: "4 2"},
	{key: "cancelled", phrase: "Cancelled", dash: "1 2"},
	{key: "failed", phrase: "Failed", dash: "6 2 1 2", hatch: true},
}

// outcomeOf returns how to draw a span with the given outcome; anything
// unknown is drawn as answered.
func outcomeOf(key string) outcome {
	for _, o := range outcomes {
		if o.key == key {
			return o
		}
	}
	return outcomes[1]
}

// placedRow is a row with each span assigned to a sub-lane.
type placedRow struct {
	row   Row
	spans []Span // sorted by start, then end
	lanes []int  // lanes[i] is the sub-lane of spans[i]
	count int    // number of sub-lanes, at least 1
	y, h  float64
}

// SVG draws the timeline as one inline <svg> element. Its height grows
// with the number of rows and with the sub-lanes needed for overlapping
// spans.
func (t *Timeline) SVG() template.HTML {
	total := t.axisEnd()
	top := tlTopPad
	if len(t.Marks) > 0 && total > 0 {
		top = tlMarksH
	}
	rows, bottom := placeRows(t.Rows, top)
	empty := total <= 0 || len(rows) == 0
	if empty {
		bottom = max(bottom, top+tlEmptyH)
	}
	plotW := width - tlRight - tlLeft
	var legend []legendItem
	height := bottom + tlAxisH
	if !empty {
		labels := make([]string, len(outcomes))
		for i, o := range outcomes {
			labels[i] = o.phrase
		}
		var n int
		legend, n = layoutLegend(labels, tlLabelX, bottom+tlAxisH+tlLegendPad, width-tlRight, tlSwatchW)
		height = bottom + tlAxisH + tlLegendPad + float64(n-1)*lineGap + 10
	}

	var d doc
	prefix := idPrefix(t.ID)
	d.open(prefix, t.Title, t.Desc, height)
	if empty {
		d.line("axis", tlLeft, bottom, tlLeft+plotW, bottom, "")
		d.noData(tlLeft+plotW/2, top+(bottom-top)/2+4)
		return d.close()
	}
	x := func(at time.Duration) float64 {
		at = min(max(at, 0), total)
		return tlLeft + float64(at)/float64(total)*plotW
	}
	d.printf(`<defs><pattern id="%s-hatch" width="4" height="4" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">`, prefix)
	d.printf(`<line class="hatch" x1="0" y1="0" x2="0" y2="4" stroke-width="1.5"/></pattern></defs>` + "\n")
	drawTicks(&d, total, top, bottom, x)
	for _, r := range rows {
		drawRow(&d, prefix, r, x)
	}
	drawMarks(&d, t.Marks, top, bottom, x)
	d.line("axis", tlLeft, bottom, tlLeft+plotW, bottom, "")
	for i, it := range legend {
		o := outcomes[i]
		drawSpanShape(&d, prefix, o, it.x, it.y-10, tlSwatchW, 10)
		d.text("label", "start", it.x+tlSwatchW+6, it.y, it.label, "")
	}
	return d.close()
}

// axisEnd is the time at the right end of the axis: Total, or when that is
// not set, the latest span end or mark.
func (t *Timeline) axisEnd() time.Duration {
	if t.Total > 0 {
		return t.Total
	}
	var end time.Duration
	for _, r := range t.Rows {
		for _, s := range r.Spans {
			end = max(end, s.End, s.Start)
		}
	}
	for _, m := range t.Marks {
		end = max(end, m.At)
	}
	return end
}

// placeRows assigns each row's spans to sub-lanes and stacks the rows from
// y = top down. It returns the rows and the y where the last one ends.
func placeRows(in []Row, top float64) ([]placedRow, float64) {
	out := make([]placedRow, len(in))
	y := top
	for i, r := range in {
		p := placedRow{row: r}
		p.spans, p.lanes, p.count = assignLanes(r.Spans)
		p.y = y
		p.h = 2*tlRowPad + float64(p.count)*tlLaneH + float64(p.count-1)*tlLaneGap
		y += p.h
		out[i] = p
	}
	return out, y
}

// assignLanes sorts spans by start (then end) and gives each the first
// sub-lane whose previous span has ended, so that overlapping calls sit one
// above the other. It returns the sorted spans, their lanes and the number
// of lanes, which is at least 1.
func assignLanes(in []Span) ([]Span, []int, int) {
	spans := append([]Span(nil), in...)
	sort.SliceStable(spans, func(i, j int) bool {
		if spans[i].Start != spans[j].Start {
			return spans[i].Start < spans[j].Start
		}
		return spans[i].End < spans[j].End
	})
	lanes := make([]int, len(spans))
	var ends []time.Duration
	for i, s := range spans {
		lane := len(ends)
		for l, e := range ends {
			if e <= s.Start {
				lane = l
				break
			}
		}
		if lane == len(ends) {
			ends = append(ends, 0)
		}
		ends[lane] = max(s.End, s.Start)
		lanes[i] = lane
	}
	return spans, lanes, max(len(ends), 1)
}

// drawTicks draws the time axis's vertical gridlines and tick labels.
func drawTicks(d *doc, total time.Duration, top, bottom float64, x func(time.Duration) float64) {
	step := timeStep(total)
	for at := time.Duration(0); at <= total; at += step {
		if at > 0 {
			d.line("grid", x(at), top, x(at), bottom, "")
		}
		d.line("axis", x(at), bottom, x(at), bottom+4, "")
		d.text("label", "middle", x(at), bottom+17, tickLabel(at, step), "")
	}
}

// drawRow draws a row's label, its spans and a rule under it.
func drawRow(d *doc, prefix string, r placedRow, x func(time.Duration) float64) {
	short, cut := truncate(r.row.Label, tlMaxLabel)
	tip := ""
	if cut {
		tip = r.row.Label
	}
	d.text("label", "start", tlLabelX, r.y+r.h/2+4, short, tip)
	for i, s := range r.spans {
		o := outcomeOf(s.Outcome)
		x0, x1 := x(s.Start), x(max(s.End, s.Start))
		w := max(x1-x0, tlMinSpanW)
		if x0+w > width-tlRight {
			x0 = width - tlRight - w
		}
		y := r.y + tlRowPad + float64(r.lanes[i])*(tlLaneH+tlLaneGap)
		d.printf("<g><title>%s</title>", esc(spanTip(s, o)))
		drawSpanShape(d, prefix, o, x0, y, w, tlLaneH)
		d.printf("</g>\n")
	}
	d.line("grid", tlLabelX, r.y+r.h, width-tlRight, r.y+r.h, "")
}

// drawSpanShape draws the rectangle for one outcome: coloured by its class,
// outlined with its dash pattern, and hatched when the outcome calls for it.
func drawSpanShape(d *doc, prefix string, o outcome, x, y, w, h float64) {
	dash := ""
	if o.dash != "" {
		dash = ` stroke-dasharray="` + o.dash + `"`
	}
	d.printf(`<rect class="%s" x="%s" y="%s" width="%s" height="%s" stroke-width="1.5"%s/>`,
		o.key, num(x), num(y), num(w), num(h), dash)
	if o.hatch {
		d.printf(`<rect x="%s" y="%s" width="%s" height="%s" fill="url(#%s-hatch)"/>`,
			num(x), num(y), num(w), num(h), prefix)
	}
}

// spanTip is the tooltip of a span: its label, outcome, times and detail.
func spanTip(s Span, o outcome) string {
	phrase := strings.ToLower(o.phrase)
	if s.Outcome != o.key {
		phrase = s.Outcome
	}
	parts := []string{s.Label, phrase, duration(s.Start) + " to " + duration(s.End)}
	if s.Detail != "" {
		parts = append(parts, s.Detail)
	}
	return strings.Join(parts, " · ")
}

// drawMarks draws each mark as a dashed vertical line with its label above
// the rows. Labels alternate between two lines so neighbours do not collide.
func drawMarks(d *doc, marks []Mark, top, bottom float64, x func(time.Duration) float64) {
	sorted := append([]Mark(nil), marks...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].At < sorted[j].At })
	for i, m := range sorted {
		mx := x(m.At)
		short, _ := truncate(m.Label, 24)
		half := textWidth(short) / 2
		lx := min(max(mx, tlLeft+half), width-tlRight-half)
		ly := top - 22 + float64(i%2)*13
		d.printf("<g><title>%s</title>", esc(m.Label+" at "+duration(m.At)))
		d.line("mark", mx, ly+3, mx, bottom, ` stroke-dasharray="3 3" stroke-width="1.5"`)
		d.text("mark-label", "middle", lx, ly, short, "")
		d.printf("</g>\n")
	}
}

// timeStep picks the spacing of time ticks: the smallest of 1, 2 or 5
// times a power of ten (from 1 ms up) that fits fewer than tlMaxTicks whole
// intervals into total.
func timeStep(total time.Duration) time.Duration {
	for mag := time.Millisecond; ; mag *= 10 {
		for _, m := range []time.Duration{1, 2, 5} {
			if step := m * mag; total/step < tlMaxTicks {
				return step
			}
		}
	}
}

// tickLabel formats a tick: in milliseconds when ticks are under 100 ms
// apart ("20 ms"), otherwise in seconds with as many decimals as the step
// needs ("0 s", "0.5 s", "1 s").
func tickLabel(at, step time.Duration) string {
	unit, name := time.Second, " s"
	if step < 100*time.Millisecond {
		unit, name = time.Millisecond, " ms"
	}
	decimals := 0
	for u := unit; step%u != 0 && u > 1; u /= 10 {
		decimals++
	}
	s := strconv.FormatFloat(float64(at)/float64(unit), 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s + name
}

// duration formats a time offset for a tooltip: whole milliseconds under a
// second ("840 ms"), otherwise seconds to one decimal place ("2.1 s").
func duration(d time.Duration) string {
	if d < time.Second {
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
}
