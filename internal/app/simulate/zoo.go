package simulate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/app/cli"
	"github.com/sluicehq/sluice/sim"
)

// zooIgnores are the flags of `sluice simulate` that describe one run and
// have no meaning in the zoo's grid.
var zooIgnores = []string{
	"scenario", "compare", "svg", "serve", "speed", "instances", "demand", "share", "share-delay",
	"headers", "headers-reset", "window", "burst-units", "fill-interval", "count-refused",
	"concurrency", "latency", "seed",
}

// runZoo is `sluice simulate --zoo`: the grid of sim.RunZoo, narrowed by
// --api, --mode and --quota, with the limiter flags applied to every run.
func runZoo(ctx context.Context, o Options, mode sim.Mode, out, errOut io.Writer) error {
	for _, name := range zooIgnores {
		if o.changed(name) {
			return cli.UsageError(fmt.Errorf("--zoo: cannot be combined with --%s", name))
		}
	}
	z := sim.DefaultZooConfig()
	z.Duration = o.Duration
	if o.changed("api") {
		api, err := sim.ParseAPI(o.API)
		if err != nil {
			return cli.UsageError(fmt.Errorf("--api: %w", err))
		}
		z.APIs = []sim.API{api}
	}
	if mode != "" {
		if mode != sim.ModeAIMD && mode != sim.ModeCUBIC {
			return cli.UsageError(fmt.Errorf("--mode: the zoo runs aimd or cubic, got %s", mode))
		}
		z.Modes = []sim.Mode{mode}
	}
	if o.changed("quota") {
		z.Quotas = []float64{o.Quota}
	}
	if o.changed("idle") {
		z.Idle = o.Idle
		if o.Idle == 0 {
			z.Idle = -1
		}
	}
	seeds, err := parseSeeds(o.Seeds)
	if err != nil {
		return cli.UsageError(err)
	}
	z.Seeds = seeds
	if o.changed("initial") {
		z.Limiter.InitialUnitsPerMinute = o.Initial
	}
	if o.changed("cubic-scale-constant") {
		z.Limiter.CUBIC.ScaleConstant = o.CubicScaleConstant
	}
	if o.changed("initial-fill") {
		z.Limiter.InitialFill = o.InitialFill
	}
	if o.changed("slow-start") {
		z.Limiter.SlowStart = o.SlowStart
	}
	if err := z.Limiter.Validate(); err != nil {
		return cli.UsageError(err)
	}
	start := time.Now()
	lastTenth := 0
	z.Progress = func(done, total int) {
		if tenth := done * 10 / total; tenth > lastTenth {
			lastTenth = tenth
			fmt.Fprintf(errOut, "sluice simulate: zoo %d%% (%d of %d jobs, %s)\n", tenth*10, done, total, time.Since(start).Round(time.Second))
		}
	}
	res, err := sim.RunZoo(ctx, z)
	if err != nil {
		return err
	}
	fmt.Fprintf(errOut, "sluice simulate: zoo done in %s\n", time.Since(start).Round(time.Second))
	if o.JSON {
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	}
	return res.WriteTable(out)
}

// parseSeeds reads --seeds: unsigned integers separated by commas.
func parseSeeds(s string) ([]uint64, error) {
	var seeds []uint64
	for part := range strings.SplitSeq(s, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(part), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("--seeds: want seeds separated by commas, such as 1,7,23, got %q", s)
		}
		seeds = append(seeds, v)
	}
	if len(seeds) == 0 {
		return nil, errors.New("--seeds: want at least one seed")
	}
	return seeds, nil
}
