package sim

import (
	"errors"
	"fmt"
	"io"
)

// Chart is a run recorded outside the simulator, drawn as Result.WriteSVG
// draws a simulated one: `sluice demo` samples its real workers and the
// model API server once a second and charts them here.
type Chart struct {
	// Title is the chart's heading.
	Title string
	// Notes are drawn under the title, a line each; at most two fit above
	// the legend.
	Notes []string
	// Series holds the samples. T, SumRate, Quota, Used, Throttles and
	// Rates must have one entry per sample, and Instances must be the
	// length of the longest Rates row. Rates are units per minute; Used is
	// the units accepted in the model API's trailing window, per minute;
	// Throttles counts the 429s since the previous sample. Sent and Queue
	// are not drawn.
	Series Series
}

// maxNotes is how many lines of notes fit between the title and the legend.
const maxNotes = 2

// WriteSVG draws the chart as a standalone SVG (no script): each
// instance's rate and the sum of the rates, the quota, the units used in
// the trailing window, and a mark under the time axis for every sample
// with a 429. The time axis spans the samples. The same Chart always gives
// the same bytes.
func (c *Chart) WriteSVG(w io.Writer) error {
	if len(c.Notes) > maxNotes {
		return fmt.Errorf("sim: chart: at most %d notes, got %d", maxNotes, len(c.Notes))
	}
	s := &c.Series
	n := len(s.T)
	for _, f := range []struct {
		name string
		len  int
	}{{"SumRate", len(s.SumRate)}, {"Quota", len(s.Quota)}, {"Used", len(s.Used)}, {"Throttles", len(s.Throttles)}, {"Rates", len(s.Rates)}} {
		if f.len != n {
			return fmt.Errorf("sim: chart: series %s has %d samples, T has %d", f.name, f.len, n)
		}
	}
	longest := 0
	for _, row := range s.Rates {
		longest = max(longest, len(row))
	}
	if longest != s.Instances {
		return fmt.Errorf("sim: chart: series Instances is %d, the longest Rates row has %d", s.Instances, longest)
	}
	for i := 1; i < n; i++ {
		if s.T[i] < s.T[i-1] {
			return errors.New("sim: chart: series T must not decrease")
		}
	}
	return writeChart(w, s, 0, false, c.Title, c.Notes)
}
