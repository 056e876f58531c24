package sim

import (
	"bytes"
	"strings"
	"testing"
)

func chartSeries() Series {
	s := Series{Instances: 2}
	for i := range 30 {
		r := 600 + 20*float64(i)
		s.T = append(s.T, float64(i))
		s.Rates = append(s.Rates, []float64{r / 2, r / 2})
		s.SumRate = append(s.SumRate, r)
		s.Quota = append(s.Quota, 1200)
		s.Used = append(s.Used, min(r, 1200))
		th := 0
		if i == 20 {
			th = 3
		}
		s.Throttles = append(s.Throttles, th)
	}
	return s
}

// TestChartSVG: a recorded series is drawn with the simulator's chart,
// under its own title and notes, the same bytes every time.
func TestChartSVG(t *testing.T) {
	c := Chart{Title: "sluice demo · 2 workers", Notes: []string{"hidden quota 1200 units/min", "400 jobs <done>"}, Series: chartSeries()}
	var a, b bytes.Buffer
	if err := c.WriteSVG(&a); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two writes of one chart differ")
	}
	wellFormed(t, a.Bytes())
	svg := a.String()
	for _, want := range []string{"sluice demo · 2 workers", "hidden quota 1200 units/min", "400 jobs &lt;done&gt;", "instance 2 rate", "429 responses"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the chart lacks %q", want)
		}
	}
	if strings.Contains(svg, "sluice simulate") || strings.Contains(svg, "units sent") {
		t.Error("the chart carries the simulator's heading or its units-sent line")
	}
}

// TestChartSVGInvalid: a series whose parts disagree is an error naming
// the part, not a broken chart.
func TestChartSVGInvalid(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*Chart)
		want string
	}{
		"short used":     {func(c *Chart) { c.Series.Used = c.Series.Used[1:] }, "series Used"},
		"short rates":    {func(c *Chart) { c.Series.Rates = c.Series.Rates[1:] }, "series Rates"},
		"instances":      {func(c *Chart) { c.Series.Instances = 3 }, "Instances is 3"},
		"time backwards": {func(c *Chart) { c.Series.T[5] = 1 }, "must not decrease"},
		"three notes":    {func(c *Chart) { c.Notes = []string{"a", "b", "c"} }, "at most 2 notes"},
	} {
		c := Chart{Title: "x", Series: chartSeries()}
		tc.edit(&c)
		var b bytes.Buffer
		err := c.WriteSVG(&b)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", name, err, tc.want)
		}
	}
}
