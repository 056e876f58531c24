package sim

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// CompareScenarios are the scenarios of the comparison table. The seed's
// no-limiter scenario is the first-throttle row of mode none.
var CompareScenarios = []string{ScenarioFirstThrottle, ScenarioNoisyNeighbor, ScenarioThreeInstances, ScenarioRamp}

// Row is one line of the comparison table.
type Row struct {
	Scenario string
	Mode     Mode
	Share    Share
	Result   *Result
}

// Compare runs each scenario in each mode and share, after adjust (which
// may be nil) has changed the scenario's Config, and returns the rows in
// that order. The no-limiter scenario runs in mode none only, and the modes
// that do not adapt (static, none) only with ShareLocal.
func Compare(scenarios []string, modes []Mode, shares []Share, adjust func(*Config)) ([]Row, error) {
	var rows []Row
	for _, name := range scenarios {
		for _, m := range modes {
			if name == ScenarioNoLimiter && m != ModeNone {
				continue
			}
			for _, sh := range shares {
				c, err := Scenario(name)
				if err != nil {
					return nil, err
				}
				c.Mode = m
				if adjust != nil {
					adjust(&c)
				}
				c.Share = sh
				if sh != ShareLocal && !c.adaptive() {
					continue
				}
				res, err := Run(c)
				if err != nil {
					return nil, fmt.Errorf("sim: %s, mode %s, share %s: %w", name, m, sh, err)
				}
				rows = append(rows, Row{Scenario: name, Mode: m, Share: sh, Result: res})
			}
		}
	}
	return rows, nil
}

// WriteTable writes rows as a Markdown table with the fields of Summary.
func WriteTable(w io.Writer, rows []Row) error {
	var b strings.Builder
	b.WriteString("| scenario | mode | share | utilization | utilization_steady | throttled | requests | units_accepted | p95_wait_s | rejected | gave_up | recovery_s | time_to_90_s |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		s := r.Result.Summary
		share := r.Share
		if share == "" {
			share = ShareLocal
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %.3f | %.3f | %d | %d | %s | %.1f | %d | %d | %s | %s |\n",
			r.Scenario, r.Mode, share, s.Utilization, s.UtilizationSteady, s.Throttled, s.Requests,
			strconv.FormatFloat(s.UnitsAccepted, 'f', -1, 64), s.P95WaitS, s.Rejected, s.GaveUp,
			optSeconds(s.RecoverySeconds), optSeconds(s.TimeTo90Seconds))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func optSeconds(v *float64) string {
	if v == nil {
		return "–"
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}
