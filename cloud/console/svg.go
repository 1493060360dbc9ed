package console

import (
	"fmt"
	"html/template"
	"math"
	"strings"
	"time"
)

// Charts are SVG written here: no chart library, nothing to load, and the
// test reads the same elements a person sees (docs/console.md).

// petColors tell pets apart on the charts (colour-blind safe palette).
var petColors = []string{"#0072b2", "#d55e00", "#009e73", "#cc79a7"}

func petColor(i int) string { return petColors[i%len(petColors)] }

// esc escapes text for SVG.
func esc(s string) string { return template.HTMLEscapeString(s) }

// sparkline draws v as a small line, newest on the right.
func sparkline(v []float64) template.HTML {
	const w, h = 150.0, 28.0
	if len(v) < 2 {
		return template.HTML(fmt.Sprintf(`<svg class="spark" viewBox="0 0 %g %g" aria-hidden="true"></svg>`, w, h))
	}
	hi := 0.0
	for _, x := range v {
		hi = math.Max(hi, x)
	}
	if hi == 0 {
		hi = 1
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="spark" viewBox="0 0 %g %g" aria-hidden="true"><polyline fill="none" stroke="currentColor" stroke-width="1.5" points="`, w, h)
	for i, x := range v {
		fmt.Fprintf(&b, "%.1f,%.1f ", float64(i)*w/float64(len(v)-1), h-1-x/hi*(h-2))
	}
	b.WriteString(`"/></svg>`)
	return template.HTML(b.String())
}

// chartMark is a span (a meal) or an instant (a refill, a fault) drawn
// over the weight chart.
type chartMark struct {
	Kind       string // meal, refill, fault, gap-lost, gap-late
	From, To   time.Time
	Label      string
	ColorIndex int
}

// column is the weight over one column of the chart.
type column struct {
	min, max, sum float64
	n             int
}

// lagMarkAfter is how far the newest reading may be behind the window's
// end before the chart marks the rest as lagging: one rollup minute, the
// gateway's batch and the consumer's flush.
const lagMarkAfter = 3 * time.Minute

// The weight chart's margins in px: the weight labels on the left, the
// times and the axis title below.
const weightLeft, weightRight, weightTop, weightBottom = 62.0, 10.0, 10.0, 38.0

// weightChart draws thing's weight from from to to, both on the bowls'
// clock (named by clock, for the axis title): the average per column as a
// line, min..max as a band, marks on top, and where no reading has
// arrived yet after the newest one, a hatched "telemetry lags" region.
// small draws the bowls page's card (600 x 185 px, whatever w and h say).
func weightChart(v seriesView, from, to time.Time, marks []chartMark, w, h float64, small bool, clock string) template.HTML {
	f := newWeightFrame(from, to, w, h, small)
	cols := f.columns(v.Buckets)
	points := f.fitWeights(cols)
	label, lagFrom := f.label(v, points, clock)

	var b strings.Builder
	f.writeOpen(&b, v.Thing, label, points, clock)
	f.writeAxes(&b, clock)
	if !lagFrom.IsZero() && lagFrom.Before(f.to) {
		f.writeLag(&b, lagFrom, v.Last, clock)
	}
	f.writeMarks(&b, marks)
	f.writeWeights(&b, cols)
	if points == 0 {
		f.writeEmpty(&b, v.Last, clock)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// weightFrame is the weight chart's geometry: its size, the plot area
// inside the margins, the window in whole buckets, the columns the
// buckets are gathered into, and the weights at the bottom and the top.
type weightFrame struct {
	w, h, pw, ph float64 // the chart and its plot area, px
	small        bool
	from, to     time.Time
	span         float64 // the window in seconds, at least one bucket
	colSec       float64 // a column in seconds, a whole number of buckets
	ncol         int
	lo, hi       float64 // grams (fitWeights)
}

// newWeightFrame lays out the chart. Columns are whole buckets (at most
// one per 3 px), aligned to them, so every bucket lands in exactly one
// column and a hole is missing data, not rounding.
func newWeightFrame(from, to time.Time, w, h float64, small bool) *weightFrame {
	if small {
		w, h = 600, 185
	}
	f := &weightFrame{w: w, h: h, small: small, to: to}
	f.pw, f.ph = w-weightLeft-weightRight, h-weightTop-weightBottom
	f.from = from.Truncate(bucketWidth)
	f.span = math.Max(to.Sub(f.from).Seconds(), bucketWidth.Seconds())
	bw := bucketWidth.Seconds()
	f.colSec = math.Ceil(f.span/math.Floor(f.pw/3)/bw) * bw
	f.ncol = int(math.Ceil(f.span / f.colSec))
	return f
}

// columns gathers the buckets inside the window into the columns.
func (f *weightFrame) columns(buckets []bucket) []column {
	cols := make([]column, f.ncol)
	for _, bk := range buckets {
		i := int(float64(bk.t-f.from.Unix()) / f.colSec)
		if bk.t < f.from.Unix() || i >= f.ncol {
			continue
		}
		c := &cols[i]
		if c.n == 0 {
			c.min, c.max = bk.min, bk.max
		}
		c.min, c.max = math.Min(c.min, bk.min), math.Max(c.max, bk.max)
		c.sum += bk.sum
		c.n += int(bk.n)
	}
	return cols
}

// fitWeights sets the weight range to the column averages with 15 g to
// spare, in whole 10 g and at least 50 g (0..400 g with no data), and
// returns the number of columns with data: the points of the line.
func (f *weightFrame) fitWeights(cols []column) (points int) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range cols {
		if c.n > 0 {
			a := c.sum / float64(c.n)
			lo, hi = math.Min(lo, a), math.Max(hi, a)
			points++
		}
	}
	if points == 0 {
		lo, hi = 0, 400
	}
	lo, hi = math.Floor((lo-15)/10)*10, math.Ceil((hi+15)/10)*10
	if hi-lo < 50 {
		hi = lo + 50
	}
	f.lo, f.hi = lo, hi
	return points
}

// x is the position of t, in Unix seconds.
func (f *weightFrame) x(t float64) float64 {
	return weightLeft + (t-float64(f.from.Unix()))/f.span*f.pw
}

// y is the position of g grams, held inside the range.
func (f *weightFrame) y(g float64) float64 {
	return weightTop + f.ph - (math.Max(f.lo, math.Min(f.hi, g))-f.lo)/(f.hi-f.lo)*f.ph
}

// colX is the position of column i's middle.
func (f *weightFrame) colX(i int) float64 {
	return weightLeft + (float64(i)+0.5)*f.colSec/f.span*f.pw
}

// label is the chart's text for screen readers and its title, and, when
// the newest reading is more than lagMarkAfter behind the window's end,
// where the lagging region starts (zero: it does not lag).
func (f *weightFrame) label(v seriesView, points int, clock string) (label string, lagFrom time.Time) {
	label = fmt.Sprintf("Weight of %s from %s to %s UTC %s: %d points from the telemetry stream", v.Thing, f.from.UTC().Format("15:04"), f.to.UTC().Format("15:04"), clock, points)
	if !v.Last.IsZero() && f.to.Sub(v.Last) > lagMarkAfter {
		lagFrom = later(v.Last, f.from)
		label += fmt.Sprintf("; telemetry lags: nothing after %s yet (%s behind)", v.Last.UTC().Format("15:04"), fmtDuration(f.to.Sub(v.Last)))
	}
	return label, lagFrom
}

// writeOpen writes the <svg> element, whose data- attributes the tests
// read, and its title.
func (f *weightFrame) writeOpen(b *strings.Builder, thing, label string, points int, clock string) {
	cls := "chart weight-chart"
	if f.small {
		cls += " small"
	}
	fmt.Fprintf(b, `<svg class="%s" viewBox="0 0 %g %g" role="img" aria-label="%s" data-points="%d" data-thing="%s" data-from="%s" data-to="%s" data-clock="%s">`,
		cls, f.w, f.h, esc(label), points, esc(thing), f.from.UTC().Format(time.RFC3339), f.to.UTC().Format(time.RFC3339), esc(clock))
	fmt.Fprintf(b, `<title>%s</title>`, esc(label))
}

// writeAxes writes the axis titles (the clock and zone of the time axis,
// the unit of the other), the weight grid and the time ticks.
func (f *weightFrame) writeAxes(b *strings.Builder, clock string) {
	fmt.Fprintf(b, `<text class="axis-title x-title" x="%g" y="%g" text-anchor="middle">%s, UTC</text>`, weightLeft+f.pw/2, f.h-3, esc(clock))
	fmt.Fprintf(b, `<text class="axis-title y-title" x="%g" y="%g" text-anchor="middle" transform="rotate(-90 %g %g)">weight (g)</text>`, 12.0, weightTop+f.ph/2, 12.0, weightTop+f.ph/2)
	for i := 0; i <= 4; i++ {
		g := f.lo + (f.hi-f.lo)*float64(i)/4
		y := f.y(g)
		fmt.Fprintf(b, `<line class="grid" x1="%g" x2="%g" y1="%.1f" y2="%.1f"/>`, weightLeft, f.w-weightRight, y, y)
		if !f.small || i%2 == 0 {
			fmt.Fprintf(b, `<text class="axis" x="%g" y="%.1f" text-anchor="end">%.0f g</text>`, weightLeft-4, y+4, g)
		}
	}
	ticks := 6
	if f.small {
		ticks = 2
	}
	for i := 0; i <= ticks; i++ {
		t := f.from.Add(time.Duration(float64(f.to.Sub(f.from)) * float64(i) / float64(ticks)))
		x := f.x(float64(t.Unix()))
		anchor := "middle"
		switch i {
		case 0:
			anchor = "start"
		case ticks:
			anchor = "end"
		}
		fmt.Fprintf(b, `<text class="axis" x="%.1f" y="%g" text-anchor="%s">%s</text>`, x, f.h-20, anchor, t.UTC().Format("15:04"))
	}
}

// writeLag hatches where telemetry lags: from lagFrom, after the newest
// reading (last), up to the window's end on the bowls' clock.
func (f *weightFrame) writeLag(b *strings.Builder, lagFrom, last time.Time, clock string) {
	x1 := f.x(float64(lagFrom.Unix()))
	fmt.Fprintf(b, `<rect class="lag-mark" x="%.1f" y="%g" width="%.1f" height="%g" data-lag-from="%s"><title>telemetry lags: no reading after %s %s yet</title></rect>`,
		x1, weightTop, math.Max(f.w-weightRight-x1, 1), f.ph, last.UTC().Format(time.RFC3339), last.UTC().Format("15:04"), esc(clock))
	if !f.small || f.w-weightRight-x1 > 120 {
		fmt.Fprintf(b, `<text class="lag-text" x="%.1f" y="%g" text-anchor="end">telemetry lags %s</text>`, f.w-weightRight-4, weightTop+14, fmtDuration(f.to.Sub(last)))
	}
}

// writeMarks writes the marks inside the window, under the line: a meal
// as a span in its pet's colour, anything else as a vertical line.
func (f *weightFrame) writeMarks(b *strings.Builder, marks []chartMark) {
	for _, mk := range marks {
		if mk.To.Before(f.from) || mk.From.After(f.to) {
			continue
		}
		x1 := f.x(float64(later(mk.From, f.from).Unix()))
		x2 := math.Max(f.x(float64(earlier(mk.To, f.to).Unix())), x1+2)
		switch mk.Kind {
		case "meal":
			fmt.Fprintf(b, `<rect class="mark meal-mark" x="%.1f" y="%g" width="%.1f" height="%g" fill="%s"><title>%s</title></rect>`, x1, weightTop, x2-x1, f.ph, petColor(mk.ColorIndex), esc(mk.Label))
		default:
			fmt.Fprintf(b, `<line class="mark %s-mark" x1="%.1f" x2="%.1f" y1="%g" y2="%g"><title>%s</title></line>`, mk.Kind, x1, x1, weightTop, weightTop+f.ph, esc(mk.Label))
		}
	}
}

// writeWeights writes the min..max band and the average line of each run
// of columns with data: both break where a column has none.
func (f *weightFrame) writeWeights(b *strings.Builder, cols []column) {
	var seg []int
	flush := func() {
		if len(seg) == 0 {
			return
		}
		b.WriteString(`<polygon class="band" points="`)
		for _, i := range seg {
			fmt.Fprintf(b, "%.1f,%.1f ", f.colX(i), f.y(cols[i].max))
		}
		for j := len(seg) - 1; j >= 0; j-- {
			fmt.Fprintf(b, "%.1f,%.1f ", f.colX(seg[j]), f.y(cols[seg[j]].min))
		}
		b.WriteString(`"/><polyline class="weight-line" points="`)
		for _, i := range seg {
			fmt.Fprintf(b, "%.1f,%.1f ", f.colX(i), f.y(cols[i].sum/float64(cols[i].n)))
		}
		b.WriteString(`"/>`)
		seg = seg[:0]
	}
	for i, c := range cols {
		if c.n == 0 {
			flush()
			continue
		}
		seg = append(seg, i)
	}
	flush()
}

// writeEmpty says, in the middle of a chart without a point, why: no
// reading yet, or none in this window (and when the newest is from).
func (f *weightFrame) writeEmpty(b *strings.Builder, last time.Time, clock string) {
	msg := "no readings from the stream yet"
	if !last.IsZero() {
		msg = fmt.Sprintf("no readings in this window: the newest is from %s %s", last.UTC().Format("Jan 2 15:04"), clock)
	}
	fmt.Fprintf(b, `<text class="empty" x="%g" y="%g" text-anchor="middle">%s</text>`, weightLeft+f.pw/2, weightTop+f.ph/2, esc(msg))
}

// timelineItem is one dot of the meal timeline.
type timelineItem struct {
	Kind  string // meal, refill, fault, gap, low, empty
	Row   int    // pet index for meals
	At    time.Time
	Pet   string
	Grams float64
	Label string
}

// timeline draws meals per pet (one row each) and the bowl's other events
// (one row) between from and to.
func timeline(pets []string, items []timelineItem, from, to time.Time, clock string) template.HTML {
	const w, left, right, rowH, top = 1000.0, 150.0, 10.0, 34.0, 6.0
	rows := len(pets) + 1
	h := top + float64(rows)*rowH + 36
	span := to.Sub(from).Seconds()
	X := func(t time.Time) float64 { return left + t.Sub(from).Seconds()/span*(w-left-right) }
	var b strings.Builder
	meals := 0
	for _, it := range items {
		if it.Kind == "meal" {
			meals++
		}
	}
	label := fmt.Sprintf("Meals per pet and bowl events from %s to %s UTC %s: %d meals", from.UTC().Format("Jan 2 15:04"), to.UTC().Format("Jan 2 15:04"), clock, meals)
	fmt.Fprintf(&b, `<svg class="chart timeline" viewBox="0 0 %g %g" role="img" aria-label="%s" data-meals="%d"><title>%s</title>`, w, h, esc(label), meals, esc(label))
	for r := 0; r < rows; r++ {
		y := top + float64(r)*rowH + rowH/2
		name := "refills, faults, gaps"
		if r < len(pets) {
			name = "pet " + pets[r]
		}
		fmt.Fprintf(&b, `<line class="grid" x1="%g" x2="%g" y1="%.1f" y2="%.1f"/>`, left, w-right, y, y)
		fmt.Fprintf(&b, `<text class="axis" x="%g" y="%.1f" text-anchor="end">%s</text>`, left-8, y+4, esc(name))
	}
	for i := 0; i <= 6; i++ {
		t := from.Add(time.Duration(float64(to.Sub(from)) * float64(i) / 6))
		anchor := "middle"
		switch i {
		case 0:
			anchor = "start"
		case 6:
			anchor = "end"
		}
		fmt.Fprintf(&b, `<text class="axis" x="%.1f" y="%g" text-anchor="%s">%s</text>`, X(t), h-20, anchor, t.UTC().Format("15:04"))
	}
	fmt.Fprintf(&b, `<text class="axis-title x-title" x="%g" y="%g" text-anchor="middle">%s, UTC</text>`, left+(w-left-right)/2, h-3, esc(clock))
	for _, it := range items {
		if it.At.Before(from) || it.At.After(to) {
			continue
		}
		x := X(it.At)
		at := it.At.UTC().Format(time.RFC3339)
		switch it.Kind {
		case "meal":
			y := top + float64(it.Row)*rowH + rowH/2
			r := 4 + math.Sqrt(math.Max(0, it.Grams))*1.1
			fmt.Fprintf(&b, `<circle class="meal" cx="%.1f" cy="%.1f" r="%.1f" fill="%s" data-kind="meal" data-pet="%s" data-at="%s" data-grams="%.1f"><title>%s</title></circle>`,
				x, y, math.Min(r, rowH/2-2), petColor(it.Row), esc(it.Pet), at, it.Grams, esc(it.Label))
		default:
			y := top + float64(len(pets))*rowH + rowH/2
			fmt.Fprintf(&b, `<g class="ev ev-%s" data-kind="%s" data-at="%s"><rect x="%.1f" y="%.1f" width="6" height="14" transform="rotate(45 %.1f %.1f)"/><title>%s</title></g>`,
				it.Kind, it.Kind, at, x-3, y-7, x, y, esc(it.Label))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
