package sim

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// Chart geometry, in SVG user units.
const (
	svgW     = 1000
	svgH     = 620
	plotL    = 80
	plotR    = 970
	plotT    = 110
	plotB    = 540
	markerH  = 10
	legendY  = 84
	legendDX = 150
)

var instanceColors = []string{"#4e79a7", "#59a14f", "#b07aa1", "#76b7b2", "#9c755f", "#edc948", "#bab0ac", "#ff9da7"}

// WriteSVG draws the run as a standalone SVG chart (no script): each
// instance's rate and the sum of the rates, the quota, the units used in
// the trailing window, and a mark under the time axis for every second with
// a 429. The same Result always gives the same bytes.
func (r *Result) WriteSVG(w io.Writer) error {
	title := "sluice simulate"
	if r.Config.Name != "" {
		title += " · " + r.Config.Name
	}
	title += fmt.Sprintf(" · mode %s · seed %d", r.Config.Mode, r.Config.Seed)
	sum := r.Summary
	sub := fmt.Sprintf("%d instances at the start · hidden quota %s units per %s s · demand %s units/min per instance · initial rate %s units/min",
		r.Config.Instances, num(r.Config.Quota), num(r.Config.Window.Seconds()), num(r.Config.Demand), num(r.Config.Limiter.InitialUnitsPerMinute))
	sub2 := fmt.Sprintf("utilization %.3f (steady %.3f) · %d requests · %d throttled · %d rejected · %d gave up · p95 wait %.1f s",
		sum.Utilization, sum.UtilizationSteady, sum.Requests, sum.Throttled, sum.Rejected, sum.GaveUp, sum.P95WaitS)
	return writeChart(w, &r.Series, r.Config.Duration.Seconds(), r.Config.Mode == ModeNone, title, []string{sub, sub2})
}

// chartScale maps time (s) and units per minute onto the plot area.
type chartScale struct {
	dur, yMax, yStep float64
}

func (c chartScale) x(t float64) float64 { return plotL + t/c.dur*(plotR-plotL) }
func (c chartScale) y(v float64) float64 { return plotB - v/c.yMax*(plotB-plotT) }

// chartLine is one series of the chart and its legend entry.
type chartLine struct {
	label, color, dash string
	width              float64
	vals               func(i int) float64
}

// writeChart draws the chart of s over at least dur seconds, under a title
// and lines of notes. With sent, the units sent are drawn instead of the
// instances' rates (mode none).
func writeChart(w io.Writer, s *Series, dur float64, sent bool, title string, notes []string) error {
	bw := bufio.NewWriter(w)
	c := newChartScale(s, dur, sent)
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", svgW, svgH, svgW, svgH)
	fmt.Fprintf(bw, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", svgW, svgH)
	fmt.Fprintf(bw, `<text x="%d" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", plotL, html.EscapeString(title))
	for i, note := range notes {
		fmt.Fprintf(bw, `<text x="%d" y="%d" fill="#444444">%s</text>`+"\n", plotL, 44+18*i, html.EscapeString(note))
	}
	writeAxes(bw, c)
	lines := chartLines(s, sent)
	for _, l := range lines {
		writeLine(bw, c, s, l)
	}
	writeThrottleMarks(bw, c, s)
	writeLegend(bw, lines)
	fmt.Fprintln(bw, `</svg>`)
	return bw.Flush()
}

// newChartScale fits the axes to s over at least dur seconds: the time
// axis to the last sample, the rate axis to the highest value drawn.
func newChartScale(s *Series, dur float64, sent bool) chartScale {
	if n := len(s.T); n > 0 {
		dur = math.Max(dur, s.T[n-1])
	}
	if dur <= 0 {
		dur = 1
	}
	top := 0.0
	for i := range s.T {
		top = math.Max(top, finite(s.Quota[i]))
		top = math.Max(top, finite(s.Used[i]))
		top = math.Max(top, finite(s.SumRate[i]))
		if sent {
			top = math.Max(top, finite(s.Sent[i]))
		}
	}
	yMax, yStep := niceScale(top * 1.1)
	return chartScale{dur: dur, yMax: yMax, yStep: yStep}
}

// writeAxes draws the grid, the axes, their ticks and their titles.
func writeAxes(bw *bufio.Writer, c chartScale) {
	x, y, dur, yMax, yStep := c.x, c.y, c.dur, c.yMax, c.yStep
	fmt.Fprintln(bw, `<g stroke="#e0e0e0" stroke-width="1">`)
	for v := 0.0; v <= yMax+yStep/2; v += yStep {
		fmt.Fprintf(bw, `<line x1="%d" y1="%s" x2="%d" y2="%s"/>`+"\n", plotL, f1(y(v)), plotR, f1(y(v)))
	}
	xStep := niceTimeStep(dur)
	for t := 0.0; t <= dur+1e-9; t += xStep {
		fmt.Fprintf(bw, `<line x1="%s" y1="%d" x2="%s" y2="%d"/>`+"\n", f1(x(t)), plotT, f1(x(t)), plotB)
	}
	fmt.Fprintln(bw, `</g>`)
	fmt.Fprintf(bw, `<g fill="#333333" text-anchor="end">`+"\n")
	for v := 0.0; v <= yMax+yStep/2; v += yStep {
		fmt.Fprintf(bw, `<text x="%d" y="%s">%s</text>`+"\n", plotL-6, f1(y(v)+4), num(v))
	}
	fmt.Fprintln(bw, `</g>`)
	fmt.Fprintf(bw, `<g fill="#333333" text-anchor="middle">`+"\n")
	for t := 0.0; t <= dur+1e-9; t += xStep {
		fmt.Fprintf(bw, `<text x="%s" y="%d">%s</text>`+"\n", f1(x(t)), plotB+markerH+18, timeLabel(t))
	}
	fmt.Fprintln(bw, `</g>`)
	fmt.Fprintf(bw, `<path d="M%d %dV%dH%d" fill="none" stroke="#333333"/>`+"\n", plotL, plotT, plotB, plotR)
	fmt.Fprintf(bw, `<text x="%d" y="%d" text-anchor="middle" fill="#333333">time (min:s)</text>`+"\n", (plotL+plotR)/2, plotB+markerH+38)
	fmt.Fprintf(bw, `<text transform="translate(22 %d) rotate(-90)" text-anchor="middle" fill="#333333">units per minute</text>`+"\n", (plotT+plotB)/2)
}

// chartLines returns the series drawn: the quota, the units used, and
// either the units sent or each instance's rate and their sum.
func chartLines(s *Series, sent bool) []chartLine {
	var lines []chartLine
	lines = append(lines, chartLine{"hidden quota", "#000000", "6 4", 1.5, func(i int) float64 { return s.Quota[i] }})
	lines = append(lines, chartLine{"units used, trailing window", "#f28e2b", "", 2, func(i int) float64 { return s.Used[i] }})
	if sent {
		lines = append(lines, chartLine{"units sent, trailing window", "#1f3b73", "", 2, func(i int) float64 { return s.Sent[i] }})
	} else {
		for k := range s.Instances {
			lines = append(lines, chartLine{fmt.Sprintf("instance %d rate", k+1), instanceColors[k%len(instanceColors)], "", 1.2, func(i int) float64 {
				if k < len(s.Rates[i]) {
					return s.Rates[i][k]
				}
				return math.NaN()
			}})
		}
		lines = append(lines, chartLine{"sum of rates", "#1f3b73", "", 2.2, func(i int) float64 { return s.SumRate[i] }})
	}
	return lines
}

// writeLine draws l as a path, lifting the pen over values that are not
// finite and clipping at the top of the rate axis.
func writeLine(bw *bufio.Writer, c chartScale, s *Series, l chartLine) {
	var d strings.Builder
	pen := false
	for i, t := range s.T {
		v := l.vals(i)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			pen = false
			continue
		}
		if pen {
			d.WriteString("L")
		} else {
			d.WriteString("M")
			pen = true
		}
		d.WriteString(f1(c.x(t)))
		d.WriteString(" ")
		d.WriteString(f1(c.y(math.Min(v, c.yMax))))
	}
	if d.Len() == 0 {
		return
	}
	dash := ""
	if l.dash != "" {
		dash = fmt.Sprintf(` stroke-dasharray="%s"`, l.dash)
	}
	fmt.Fprintf(bw, `<path d="%s" fill="none" stroke="%s" stroke-width="%s"%s stroke-linejoin="round"><title>%s</title></path>`+"\n",
		d.String(), l.color, f1(l.width), dash, html.EscapeString(l.label))
}

// writeThrottleMarks draws a mark under the time axis for every second
// with a 429.
func writeThrottleMarks(bw *bufio.Writer, c chartScale, s *Series) {
	var m strings.Builder
	for i, t := range s.T {
		if s.Throttles[i] > 0 {
			fmt.Fprintf(&m, "M%s %dv%d", f1(c.x(t-0.5)), plotB+2, markerH)
		}
	}
	if m.Len() > 0 {
		fmt.Fprintf(bw, `<path d="%s" stroke="#e15759" stroke-width="1.5"><title>429 responses</title></path>`+"\n", m.String())
	}
}

// writeLegend draws an entry for every line and one for the 429 marks,
// wrapping to a new row at the right edge of the plot.
func writeLegend(bw *bufio.Writer, lines []chartLine) {
	type entry struct{ label, color, dash string }
	entries := make([]entry, 0, len(lines)+1)
	for _, l := range lines {
		entries = append(entries, entry{l.label, l.color, l.dash})
	}
	entries = append(entries, entry{"429 (a mark per second)", "#e15759", ""})
	lx, ly := float64(plotL), float64(legendY)
	for _, e := range entries {
		width := float64(legendDX)
		if len(e.label) > 18 {
			width += float64(len(e.label)-18) * 6
		}
		if lx+width > plotR {
			lx, ly = plotL, ly+16
		}
		dash := ""
		if e.dash != "" {
			dash = fmt.Sprintf(` stroke-dasharray="%s"`, e.dash)
		}
		fmt.Fprintf(bw, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2.5"%s/>`, f1(lx), f1(ly-4), f1(lx+22), f1(ly-4), e.color, dash)
		fmt.Fprintf(bw, `<text x="%s" y="%s">%s</text>`+"\n", f1(lx+28), f1(ly), html.EscapeString(e.label))
		lx += width
	}
}

func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// niceScale returns an axis maximum of at least top and a step that
// divides it into 4 to 10 parts of 1, 2 or 5 times a power of ten.
func niceScale(top float64) (max, step float64) {
	if !(top > 0) {
		return 1, 0.2
	}
	raw := top / 6
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if step = m * p; step >= raw {
			break
		}
	}
	return math.Ceil(top/step) * step, step
}

// niceTimeStep returns a tick step in seconds giving at most about 16
// ticks.
func niceTimeStep(dur float64) float64 {
	for _, s := range []float64{10, 30, 60, 120, 300, 600, 900, 1800, 3600} {
		if dur/s <= 16 {
			return s
		}
	}
	return math.Ceil(dur/16/3600) * 3600
}

func timeLabel(t float64) string {
	s := int(math.Round(t))
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
