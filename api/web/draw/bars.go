package draw

import (
	"html/template"
	"strconv"
)

// MaxSeries is the number of series a bar chart shows. Bars.SVG folds any
// further series into the last one, labelled "Other".
const MaxSeries = 8

// Layout of a bar chart, in SVG user units.
const (
	barsTop      = 12.0  // space above the plot
	barsPlotH    = 220.0 // height of the plot area
	barsAxisGap  = 6.0   // gap between an axis and its labels
	barsXLabelH  = 24.0  // height of the row of bar labels under the plot
	barsRight    = 12.0  // space right of the plot
	barsSwatch   = 12.0  // size of a legend colour swatch
	barsBarShare = 0.75  // share of each bar's slot taken by the bar
)

// Series is one stacked series of a bar chart: a label and a value per bar.
// Negative values are drawn as zero.
type Series struct {
	Label  string
	Values []int64
}

// Bars is a stacked bar chart: one bar per category (a day), series stacked.
type Bars struct {
	ID     string             // id prefix for title/desc ids
	Title  string             // the chart's accessible name
	Desc   string             // a sentence summarising the chart for screen readers
	Labels []string           // one per bar, e.g. "1 Nov"; every Nth label shown when crowded
	Series []Series           // at most 8 shown; the caller folds the rest into "Other"
	Format func(int64) string // formats a value for the y axis and tooltips (e.g. micro-USD as "$1.23"); nil means plain digits
}

// barsLayout holds the measurements shared by the parts of one bar chart.
type barsLayout struct {
	left, plotW, bottom float64 // plot area: x of the y axis, width, y of the x axis
	top                 float64 // the value at the top gridline
	step                int64   // value between gridlines
	count               int     // number of gridlines above zero
	slot                float64 // horizontal space per bar
}

// SVG draws the chart as one inline <svg> element.
func (b *Bars) SVG() template.HTML {
	series := foldSeries(b.Series)
	n := barCount(b.Labels, series)
	totals := barTotals(series, n)
	var peak int64
	for _, t := range totals {
		peak = max(peak, t)
	}
	lay := b.layout(n, peak)
	legendLabels := make([]string, len(series))
	legendTips := make([]string, len(series))
	for i, s := range series {
		var cut bool
		if legendLabels[i], cut = truncate(s.Label, 40); cut {
			legendTips[i] = s.Label
		}
	}
	legendY := lay.bottom + barsXLabelH + 14
	items, rows := layoutLegend(legendLabels, lay.left, legendY, width-barsRight, barsSwatch)
	height := legendY + float64(rows-1)*lineGap + 12
	if peak == 0 {
		items, height = nil, lay.bottom+barsXLabelH
	}

	var d doc
	prefix := idPrefix(b.ID)
	d.open(prefix, b.Title, b.Desc, height)
	if peak == 0 {
		d.line("axis", lay.left, barsTop, lay.left, lay.bottom, "")
		d.line("axis", lay.left, lay.bottom, lay.left+lay.plotW, lay.bottom, "")
		d.noData(lay.left+lay.plotW/2, barsTop+barsPlotH/2)
		return d.close()
	}
	b.drawGrid(&d, lay)
	b.drawBars(&d, lay, series, n)
	d.line("axis", lay.left, barsTop, lay.left, lay.bottom, "")
	d.line("axis", lay.left, lay.bottom, lay.left+lay.plotW, lay.bottom, "")
	b.drawXLabels(&d, lay, n)
	for i, it := range items {
		d.printf(`<rect class="s%s" x="%s" y="%s" width="%s" height="%s"/>`+"\n", strconv.Itoa(i),
			num(it.x), num(it.y-barsSwatch+2), num(barsSwatch), num(barsSwatch))
		d.text("label", "start", it.x+barsSwatch+6, it.y, it.label, legendTips[i])
	}
	return d.close()
}

// layout measures the plot for n bars whose tallest stack is peak.
func (b *Bars) layout(n int, peak int64) barsLayout {
	step, count := niceScale(peak)
	widest := 1.0
	for k := 0; k <= count; k++ {
		widest = max(widest, textWidth(b.format(int64(k)*step)))
	}
	lay := barsLayout{
		left:   8 + widest + barsAxisGap,
		bottom: barsTop + barsPlotH,
		top:    float64(step) * float64(count),
		step:   step,
		count:  count,
	}
	lay.plotW = width - barsRight - lay.left
	if n > 0 {
		lay.slot = lay.plotW / float64(n)
	}
	return lay
}

// drawGrid draws the horizontal gridlines and their value labels.
func (b *Bars) drawGrid(d *doc, lay barsLayout) {
	for k := 0; k <= lay.count; k++ {
		v := int64(k) * lay.step
		y := lay.bottom - float64(v)/lay.top*barsPlotH
		if k > 0 {
			d.line("grid", lay.left, y, lay.left+lay.plotW, y, "")
		}
		d.text("label", "end", lay.left-barsAxisGap, y+4, b.format(v), "")
	}
}

// drawBars draws every bar as a stack of one rectangle per non-zero value,
// each with a tooltip naming the bar, the series and the value.
func (b *Bars) drawBars(d *doc, lay barsLayout, series []Series, n int) {
	barW := lay.slot * barsBarShare
	for i := 0; i < n; i++ {
		x := lay.left + float64(i)*lay.slot + (lay.slot-barW)/2
		y := lay.bottom
		for si, s := range series {
			v := valueAt(s, i)
			if v == 0 {
				continue
			}
			h := float64(v) / lay.top * barsPlotH
			y -= h
			tip := label(b.Labels, i) + " · " + s.Label + ": " + b.format(v)
			d.printf(`<rect class="s%s seg" x="%s" y="%s" width="%s" height="%s" stroke-width="0.5">`,
				strconv.Itoa(si), num(x), num(y), num(barW), num(h))
			d.printf("<title>%s</title></rect>\n", esc(tip))
		}
	}
}

// drawXLabels writes the bar labels under the plot, skipping some when they
// would otherwise overlap: every Nth label is shown, starting with the first.
func (b *Bars) drawXLabels(d *doc, lay barsLayout, n int) {
	widest := 0.0
	for i := 0; i < n; i++ {
		widest = max(widest, textWidth(label(b.Labels, i)))
	}
	every := 1
	for float64(every)*lay.slot < widest+8 {
		every++
	}
	for i := 0; i < n; i += every {
		x := lay.left + (float64(i)+0.5)*lay.slot
		d.text("label", "middle", x, lay.bottom+barsAxisGap+12, label(b.Labels, i), "")
	}
}

// format formats v with the chart's Format function, or as plain digits.
func (b *Bars) format(v int64) string {
	if b.Format != nil {
		return b.Format(v)
	}
	return strconv.FormatInt(v, 10)
}

// foldSeries returns the series to draw: all of them when there are at most
// MaxSeries, otherwise the first MaxSeries-1 and an "Other" series summing
// the rest.
func foldSeries(in []Series) []Series {
	if len(in) <= MaxSeries {
		return in
	}
	out := append([]Series(nil), in[:MaxSeries-1]...)
	other := Series{Label: "Other"}
	for _, s := range in[MaxSeries-1:] {
		for i := range s.Values {
			for len(other.Values) <= i {
				other.Values = append(other.Values, 0)
			}
			other.Values[i] += valueAt(s, i)
		}
	}
	return append(out, other)
}

// barCount is the number of bars: one per label, or more if a series has
// more values than there are labels.
func barCount(labels []string, series []Series) int {
	n := len(labels)
	for _, s := range series {
		n = max(n, len(s.Values))
	}
	return n
}

// barTotals returns the height of each of the n stacks.
func barTotals(series []Series, n int) []int64 {
	totals := make([]int64, n)
	for _, s := range series {
		for i := range totals {
			totals[i] += valueAt(s, i)
		}
	}
	return totals
}

// valueAt returns the series' value for bar i, or 0 when it has none or it
// is negative.
func valueAt(s Series, i int) int64 {
	if i >= len(s.Values) || s.Values[i] < 0 {
		return 0
	}
	return s.Values[i]
}

// label returns the label of bar i, or "" when there is none.
func label(labels []string, i int) string {
	if i < len(labels) {
		return labels[i]
	}
	return ""
}
