// Package draw renders the dashboard's charts on the server as inline SVG:
// stacked bar charts (Bars) and deliberation timelines (Timeline).
//
// The output is one <svg> element, safe to embed in a page whose
// Content-Security-Policy forbids inline script and style attributes: it
// uses only SVG presentation attributes and CSS classes, never a style
// attribute, script or event handler, and every piece of caller text is
// XML-escaped. Colours come from the classes styled by CSS, which the site
// stylesheet includes. Each chart is an accessible image (role="img") named
// by its own <title> and <desc>, and scales to the width of its container.
// The output is deterministic, so it can be compared with golden files.
package draw

import (
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// CSS styles the classes used by the charts, with a variant for dark colour
// schemes. Series colours (s0–s7), outcome colours, axes and marks all have
// a contrast of at least 3:1 against white in the light scheme and against
// #14171f in the dark one; label text has at least 4.5:1. The site
// stylesheet includes it verbatim.
const CSS = `.chart { font-family: inherit; }
.chart .label { fill: #374151; }
.chart .axis { stroke: #4b5563; }
.chart .grid { stroke: #e5e7eb; }
.chart .mark { stroke: #7c3aed; }
.chart .mark-label { fill: #5b21b6; }
.chart .seg { stroke: #ffffff; }
.chart .hatch { stroke: #ffffff; }
.chart .s0 { fill: #1d6fb8; }
.chart .s1 { fill: #c2410c; }
.chart .s2 { fill: #15803d; }
.chart .s3 { fill: #7e22ce; }
.chart .s4 { fill: #be123c; }
.chart .s5 { fill: #0e7490; }
.chart .s6 { fill: #8a6a00; }
.chart .s7 { fill: #57534e; }
.chart .won { fill: #15803d; stroke: #15803d; }
.chart .answered { fill: #1d4ed8; stroke: #1d4ed8; }
.chart .cut { fill: #6b7280; fill-opacity: 0.25; stroke: #6b7280; }
.chart .cancelled { fill: #a16207; fill-opacity: 0.25; stroke: #a16207; }
.chart .failed { fill: #b91c1c; stroke: #b91c1c; }
@media (prefers-color-scheme: dark) {
.chart .label { fill: #d1d5db; }
.chart .axis { stroke: #9ca3af; }
.chart .grid { stroke: #2d3340; }
.chart .mark { stroke: #c4b5fd; }
.chart .mark-label { fill: #c4b5fd; }
.chart .seg { stroke: #14171f; }
.chart .hatch { stroke: #14171f; }
.chart .s0 { fill: #60a5fa; }
.chart .s1 { fill: #fb923c; }
.chart .s2 { fill: #4ade80; }
.chart .s3 { fill: #c084fc; }
.chart .s4 { fill: #fb7185; }
.chart .s5 { fill: #22d3ee; }
.chart .s6 { fill: #facc15; }
.chart .s7 { fill: #a8a29e; }
.chart .won { fill: #4ade80; stroke: #4ade80; }
.chart .answered { fill: #60a5fa; stroke: #60a5fa; }
.chart .cut { fill: #9ca3af; fill-opacity: 0.25; stroke: #9ca3af; }
.chart .cancelled { fill: #fbbf24; fill-opacity: 0.25; stroke: #fbbf24; }
.chart .failed { fill: #f87171; stroke: #f87171; }
}
`

// Layout constants shared by both kinds of chart, in SVG user units.
const (
	width     = 640.0 // viewBox width; the chart is scaled to its container
	fontSize  = 12.0  // default text size; nothing is drawn smaller than 11
	charWidth = 7.0   // a generous estimate of one character's width
	lineGap   = 20.0  // distance between legend rows
)

// doc accumulates the markup of one chart.
type doc struct {
	b strings.Builder
}

// open writes the <svg> start tag with its accessible <title> and <desc>.
// The element is named by prefix-title and described by prefix-desc.
func (d *doc) open(prefix, title, desc string, height float64) {
	d.printf(`<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img"`)
	d.printf(` aria-labelledby="%s-title %s-desc"`, prefix, prefix)
	d.printf(` viewBox="0 0 %s %s" width="100%%"`, num(width), num(height))
	d.printf(` preserveAspectRatio="xMidYMin meet" font-size="%s">`+"\n", num(fontSize))
	d.printf(`<title id="%s-title">%s</title>`+"\n", prefix, esc(title))
	d.printf(`<desc id="%s-desc">%s</desc>`+"\n", prefix, esc(desc))
}

// close writes the </svg> end tag and returns the finished chart.
func (d *doc) close() template.HTML {
	d.b.WriteString("</svg>\n")
	return template.HTML(d.b.String())
}

// printf appends format with each %s replaced, in order, by args. Only %s
// and %% are understood; callers escape text themselves. It avoids fmt so
// that numbers are only ever formatted by num.
func (d *doc) printf(format string, args ...string) {
	for {
		i := strings.IndexByte(format, '%')
		if i < 0 || i+1 >= len(format) {
			d.b.WriteString(format)
			return
		}
		d.b.WriteString(format[:i])
		switch format[i+1] {
		case 's':
			if len(args) > 0 {
				d.b.WriteString(args[0])
				args = args[1:]
			}
		default:
			d.b.WriteByte(format[i+1])
		}
		format = format[i+2:]
	}
}

// line draws a line from (x1, y1) to (x2, y2); extra is written verbatim
// inside the tag and must come from this package, never from a caller.
func (d *doc) line(class string, x1, y1, x2, y2 float64, extra string) {
	d.printf(`<line class="%s" x1="%s" y1="%s" x2="%s" y2="%s"%s/>`+"\n",
		class, num(x1), num(y1), num(x2), num(y2), extra)
}

// text writes escaped text at (x, y). When tip is not empty it becomes a
// <title> child, shown as a tooltip and read by assistive technology.
func (d *doc) text(class, anchor string, x, y float64, s, tip string) {
	d.printf(`<text class="%s" x="%s" y="%s" text-anchor="%s">`, class, num(x), num(y), anchor)
	if tip != "" {
		d.printf(`<title>%s</title>`, esc(tip))
	}
	d.printf("%s</text>\n", esc(s))
}

// noData writes the words "No data" centred in a plot area.
func (d *doc) noData(cx, cy float64) {
	d.text("label", "middle", cx, cy, "No data", "")
}

// num formats a coordinate with one decimal place, dropping a trailing ".0"
// and never writing "-0".
func num(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		x = 0
	}
	s := strconv.FormatFloat(x, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	if s == "-0" {
		return "0"
	}
	return s
}

// esc escapes s for use as XML text or in a double-quoted attribute, first
// dropping characters that XML 1.0 does not allow at all.
func esc(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20, r == 0xFFFE, r == 0xFFFF:
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	return html.EscapeString(s)
}

// idPrefix turns a caller's id prefix into one that is a valid XML name:
// letters, digits, '-' and '_' are kept, anything else becomes '-', and a
// prefix that is empty or does not start with a letter is given a "chart-"
// prefix.
func idPrefix(id string) string {
	var b strings.Builder
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	s := b.String()
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		s = "chart-" + s
	}
	return s
}

// truncate shortens s to at most n characters, ending it with "…" when
// anything was cut, and reports whether it did.
func truncate(s string, n int) (string, bool) {
	if utf8.RuneCountInString(s) <= n {
		return s, false
	}
	r := []rune(s)
	return string(r[:n-1]) + "…", true
}

// textWidth estimates how wide s is drawn at the default font size.
func textWidth(s string) float64 {
	return float64(utf8.RuneCountInString(s)) * charWidth
}

// legendItem is one entry of a legend: its text and where it is drawn.
type legendItem struct {
	label string
	x, y  float64
}

// layoutLegend places legend entries left to right from (x0, y0), wrapping
// onto a new row when an entry would pass maxX. Each entry takes a swatch
// of swatchW, a gap, and its label. It returns the entries and the number
// of rows used.
func layoutLegend(labels []string, x0, y0, maxX, swatchW float64) ([]legendItem, int) {
	items := make([]legendItem, 0, len(labels))
	x, y, rows := x0, y0, 1
	for _, l := range labels {
		w := swatchW + 6 + textWidth(l) + 16
		if x > x0 && x+w > maxX {
			x, y, rows = x0, y+lineGap, rows+1
		}
		items = append(items, legendItem{label: l, x: x, y: y})
		x += w
	}
	return items, rows
}

// niceScale picks the gridline step for values from 0 to peak: a step of 1,
// 2 or 5 times a power of ten giving at most 5 gridlines above zero. It
// returns the step and the number of gridlines, which is at least 3 so that
// small values still get a readable axis. For peak <= 0 it returns 1 and 3.
func niceScale(peak int64) (step int64, count int) {
	if peak <= 0 {
		return 1, 3
	}
	mag := int64(1)
	for mag <= peak/50 { // 5*mag <= max/10: every step of this size is too small
		mag *= 10
	}
	for {
		for _, m := range []int64{1, 2, 5} {
			step = m * mag
			n := peak / step
			if peak%step != 0 {
				n++
			}
			if n <= 5 {
				return step, int(max(n, 3))
			}
		}
		mag *= 10
	}
}
