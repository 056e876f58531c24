// Package simulate is `sluice simulate` and `sluice testserver`: runs of
// the model clients against the model API in virtual time (one run, the
// comparison table, the zoo, the live page), and the model API served over
// HTTP. Options hold the command line's values; the functions validate
// them with errors naming the flag and write what the commands print.
package simulate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice/internal/app/cli"
	"github.com/sluicehq/sluice/sim"
)

// Options are the flags of `sluice simulate`.
type Options struct {
	Scenario           string
	Mode               string
	Duration           time.Duration
	Quota              float64
	Instances          int
	Demand             float64
	Seed               uint64
	Initial            float64
	CubicScaleConstant float64
	API                string
	Window             time.Duration
	Burst              float64
	FillInterval       time.Duration
	CountRefused       bool
	Delay              bool
	NoRetryAfter       bool
	Concurrency        int
	Latency            time.Duration
	Idle               time.Duration
	InitialFill        float64
	SlowStart          bool
	JSON               bool
	SVG                string
	Compare            bool
	Serve              string
	Speed              float64
	Share              string
	ShareDelay         time.Duration
	Headers            Headers
	Zoo                bool
	Seeds              string
	// Changed reports whether the user set the flag of this name; the
	// values of flags left unset give way to the scenario's. Nil: none set.
	Changed func(flag string) bool
}

func (o Options) changed(flag string) bool { return o.Changed != nil && o.Changed(flag) }

// Run is `sluice simulate`: it validates o, runs what it asks for and
// writes the result to out, progress to errOut. With o.Serve it serves the
// simulator page until ctx ends.
func Run(ctx context.Context, o Options, out, errOut io.Writer) error {
	adjust, err := o.adjust()
	if err != nil {
		return cli.UsageError(err)
	}
	var mode sim.Mode
	if o.Mode != "" {
		if mode, err = sim.ParseMode(o.Mode); err != nil {
			return cli.UsageError(fmt.Errorf("--mode: %w", err))
		}
	}
	if _, err := sim.Scenario(o.Scenario); err != nil {
		return cli.UsageError(fmt.Errorf("--scenario: %w", err))
	}
	if o.Zoo {
		return runZoo(ctx, o, mode, out, errOut)
	}
	if o.changed("seeds") {
		return cli.UsageError(errors.New("--seeds: applies to --zoo only"))
	}
	if o.Compare {
		if o.JSON || o.SVG != "" || o.Serve != "" {
			return cli.UsageError(errors.New("--compare: cannot be combined with --json, --svg or --serve"))
		}
		scenarios, modes := sim.CompareScenarios, sim.Modes
		if o.changed("scenario") {
			scenarios = []string{o.Scenario}
		}
		if mode != "" {
			modes = []sim.Mode{mode}
		}
		shares := sim.Shares
		if o.changed("share") {
			shares = []sim.Share{sim.Share(o.Share)}
		}
		rows, err := sim.Compare(scenarios, modes, shares, adjust)
		if err != nil {
			return err
		}
		return sim.WriteTable(out, rows)
	}
	cfg, _ := sim.Scenario(o.Scenario)
	if mode != "" {
		if o.Scenario == sim.ScenarioNoLimiter && mode != sim.ModeNone {
			return cli.UsageError(fmt.Errorf("--mode: scenario no-limiter runs with mode none; use --scenario first-throttle --mode %s", mode))
		}
		cfg.Mode = mode
	}
	adjust(&cfg)
	if o.Serve != "" {
		return servePage(ctx, o, cfg, errOut)
	}
	return runOne(o, cfg, out)
}

// runOne runs cfg once, writes the chart to o.SVG if set, and prints the
// summary as a table or, with o.JSON, one JSON object.
func runOne(o Options, cfg sim.Config, out io.Writer) error {
	res, err := sim.Run(cfg)
	if err != nil {
		return err
	}
	if o.SVG != "" {
		var b bytes.Buffer
		if err := res.WriteSVG(&b); err != nil {
			return err
		}
		if err := os.WriteFile(o.SVG, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--svg: %w", err)
		}
	}
	if o.JSON {
		b, err := json.Marshal(res.Summary)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	}
	return writeSummary(out, res)
}

func writeSummary(w io.Writer, res *sim.Result) error {
	c, s := res.Config, res.Summary
	fmt.Fprintf(w, "scenario %s, mode %s, share %s, seed %d, %v of virtual time\n", c.Name, c.Mode, c.Share, c.Seed, c.Duration)
	fmt.Fprintf(w, "api %s, hidden quota %v units per %v; %d instances, each offered %v units/min; initial rate %v units/min\n",
		c.API, c.Quota, c.Window, c.Instances, c.Demand, c.Limiter.InitialUnitsPerMinute)
	if c.Idle > 0 {
		fmt.Fprintf(w, "the demand starts after %v of idle time; the figures count from then\n", c.Idle)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	opt := func(v *float64, none string) string {
		if v == nil {
			return none
		}
		return strconv.FormatFloat(*v, 'f', -1, 64)
	}
	noDrop := "– (no quota drop)"
	for _, e := range c.Events {
		if e.Kind == sim.QuotaDrop {
			noDrop = "– (never reached 90%)"
		}
	}
	fmt.Fprintf(tw, "utilization\t%.3f\taccepted units ÷ quota capacity\n", s.Utilization)
	fmt.Fprintf(tw, "utilization_steady\t%.3f\tfrom %v on\n", s.UtilizationSteady, c.SteadyFrom)
	fmt.Fprintf(tw, "throttled\t%d\t429 responses\n", s.Throttled)
	fmt.Fprintf(tw, "requests\t%d\tcalls that reached the API\n", s.Requests)
	fmt.Fprintf(tw, "units_accepted\t%v\t\n", s.UnitsAccepted)
	fmt.Fprintf(tw, "p95_wait_s\t%.3f\twait for units in the limiter\n", s.P95WaitS)
	fmt.Fprintf(tw, "rejected\t%d\tturned away by the limiter (queue full, max_wait)\n", s.Rejected)
	fmt.Fprintf(tw, "gave_up\t%d\tjobs dropped after the last retry\n", s.GaveUp)
	fmt.Fprintf(tw, "recovery_s\t%s\tafter the quota returns, to 90%% of it\n", opt(s.RecoverySeconds, noDrop))
	fmt.Fprintf(tw, "time_to_90_s\t%s\tfrom the start, to 90%% of the quota\n", opt(s.TimeTo90Seconds, "– (never)"))
	fmt.Fprintf(tw, "queue\tmax %d, mean %.1f\trequests waiting in all limiters\n", res.MaxQueue, res.MeanQueue)
	return tw.Flush()
}
