package draw

import (
	"html/template"
	"math"
	"strconv"
)

// Interval is a chart of estimates with their intervals on a scale from 0
// to 1: one row per estimate, a bar from its lower bound to its upper
// bound and a dot at the estimate, against vertical threshold marks (a
// certification's win rate W against the verdict's thresholds, say).
type Interval struct {
	// ID prefixes the ids of the chart's elements; it must be unique on
	// the page.
	ID    string
	Title string
	Desc  string
	// Rows are drawn top to bottom.
	Rows []IntervalRow
	// Marks are vertical lines across every row, labelled above the plot.
	Marks []Threshold
}

// IntervalRow is one estimate. A value that is NaN or infinite is
// undefined: a row whose estimate is undefined says so instead of a dot,
// and one whose bounds are undefined draws no bar.
type IntervalRow struct {
	Label               string
	Value, Lower, Upper float64
}

// Threshold is a threshold drawn across the plot at At (from 0 to 1).
type Threshold struct {
	Label string
	At    float64
}

// Interval chart layout, in SVG user units.
const (
	ivLabelW = 150.0 // the rows' label column
	ivRight  = 24.0  // room right of the plot
	ivRowH   = 30.0
	ivAxisH  = 28.0 // the scale's labels under the plot
	ivLabelN = 20   // characters of a row label before it is cut
)

// SVG renders the chart.
func (c *Interval) SVG() template.HTML {
	prefix := idPrefix(c.ID)
	top := 8 + float64(len(c.Marks))*lineGap
	plotW := width - ivLabelW - ivRight
	x := func(v float64) float64 { return ivLabelW + math.Min(math.Max(v, 0), 1)*plotW }
	bottom := top + float64(max(len(c.Rows), 1))*ivRowH
	var d doc
	d.open(prefix, c.Title, c.Desc, bottom+ivAxisH)
	for i := 0; i <= 4; i++ {
		v := float64(i) / 4
		d.line("grid", x(v), top, x(v), bottom, "")
		d.text("label", "middle", x(v), bottom+18, fixed(v), "")
	}
	d.line("axis", x(0), bottom, x(1), bottom, "")
	if len(c.Rows) == 0 {
		d.noData(ivLabelW+plotW/2, top+ivRowH/2+4)
	}
	for i, r := range c.Rows {
		mid := top + float64(i)*ivRowH + ivRowH/2
		label, cut := truncate(r.Label, ivLabelN)
		tip := ""
		if cut {
			tip = r.Label
		}
		d.text("label", "start", 0, mid+4, label, tip)
		if !defined(r.Value) {
			d.text("label", "start", x(0)+6, mid+4, "not defined", "")
			continue
		}
		figures := r.Label + ": " + fixed(r.Value)
		if defined(r.Lower) && defined(r.Upper) {
			figures += ", 95% interval " + fixed(r.Lower) + " to " + fixed(r.Upper)
			d.printf(`<rect class="answered" x="%s" y="%s" width="%s" height="6" rx="3"><title>%s</title></rect>`+"\n",
				num(x(r.Lower)), num(mid-3), num(math.Max(x(r.Upper)-x(r.Lower), 1)), esc(figures))
		}
		d.printf(`<circle class="won" cx="%s" cy="%s" r="6"><title>%s</title></circle>`+"\n",
			num(x(r.Value)), num(mid), esc(figures))
	}
	for i, m := range c.Marks {
		at := x(m.At)
		y := 8 + float64(i)*lineGap + fontSize
		d.line("mark", at, top-4, at, bottom, ` stroke-width="2" stroke-dasharray="4 3"`)
		// A mark's label reads away from the marks above it, so that no
		// label crosses another mark's line.
		anchor, dx := "start", 4.0
		for _, o := range c.Marks {
			if o.At > m.At {
				anchor, dx = "end", -4
			}
		}
		d.text("mark-label", anchor, at+dx, y, m.Label+" "+fixed(m.At), "")
	}
	return d.close()
}

// defined reports whether v is a number.
func defined(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// fixed is v with two decimals, as the chart labels it.
func fixed(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
