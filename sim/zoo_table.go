package sim

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// WriteTable writes the zoo as one Markdown table, a row per cell with
// the seeds' figures in the order of Seeds, a summary line, and a second
// table: the cells passing of each API and setting.
func (z *Zoo) WriteTable(w io.Writer) error {
	var b strings.Builder
	seeds := make([]string, len(z.Seeds))
	for i, s := range z.Seeds {
		seeds[i] = strconv.FormatUint(s, 10)
	}
	fmt.Fprintf(&b, "Seeds %s; each column lists one figure per seed, in that order.\n\n", strings.Join(seeds, ", "))
	b.WriteString("| api | quota/min | setting | controller | utilization_steady | time_to_90_s | throttled | oracle rate ÷ quota | oracle utilization | feasible | mark |\n")
	b.WriteString("|---|---:|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range z.Cells {
		var util, t90, thr, ofrac, outil []string
		feasible := 0
		var misses []string
		for _, s := range c.Seeds {
			util = append(util, strconv.FormatFloat(s.Summary.UtilizationSteady, 'f', 3, 64))
			t90 = append(t90, optSeconds(s.Summary.TimeTo90Seconds))
			thr = append(thr, strconv.Itoa(s.Summary.Throttled))
			if s.Oracle.Found {
				ofrac = append(ofrac, strconv.FormatFloat(s.Oracle.Fraction, 'f', 3, 64))
				outil = append(outil, strconv.FormatFloat(s.Oracle.UtilizationSteady, 'f', 3, 64))
			} else {
				ofrac, outil = append(ofrac, "none"), append(outil, "–")
			}
			if s.Feasible {
				feasible++
			}
			if !s.Pass {
				misses = append(misses, fmt.Sprintf("%d: %s", s.Seed, strings.Join(s.Misses, ", ")))
			}
		}
		mark := "PASS"
		if !c.Pass {
			mark = "FAIL (" + strings.Join(misses, "; ") + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d/%d | %s |\n",
			c.API, thousands(c.Quota), c.Setting, c.Mode,
			strings.Join(util, " "), strings.Join(t90, " "), strings.Join(thr, " "),
			strings.Join(ofrac, " "), strings.Join(outil, " "), feasible, len(c.Seeds), mark)
	}
	fmt.Fprintf(&b, "\nzoo: %d cells failing of %d (%d with a feasible seed missing its target, %d only on other seeds); %d of %d seeds feasible; runs of %s\n",
		z.Failing, len(z.Cells), z.FailingFeasible, z.FailingOther, z.FeasibleSeeds, z.TotalSeeds, shortDuration(time.Duration(z.DurationS*float64(time.Second))))
	b.WriteString("\n")
	z.writeBySetting(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeBySetting writes the cells passing of each API and setting (every
// quota and controller), in the order of the cells.
func (z *Zoo) writeBySetting(b *strings.Builder) {
	type key struct {
		api     API
		setting string
	}
	var order []key
	cells, passing := map[key]int{}, map[key]int{}
	for _, c := range z.Cells {
		k := key{c.API, c.Setting}
		if cells[k] == 0 {
			order = append(order, k)
		}
		cells[k]++
		if c.Pass {
			passing[k]++
		}
	}
	b.WriteString("| api | setting | cells passing | cells |\n")
	b.WriteString("|---|---|---:|---:|\n")
	for _, k := range order {
		fmt.Fprintf(b, "| %s | %s | %d | %d |\n", k.api, k.setting, passing[k], cells[k])
	}
}

// shortDuration formats d in whole seconds below 10 minutes (60s), else
// in minutes (15m) when it is whole minutes.
func shortDuration(d time.Duration) string {
	if d >= 10*time.Minute && d%time.Minute == 0 {
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}

// thousands formats a whole number with commas: 45,000.
func thousands(v float64) string {
	s := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
