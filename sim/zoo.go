package sim

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sluicehq/sluice/limiter"
)

// The zoo is a grid of runs, every model API at several quotas and settings
// under each controller, each beside its oracle: the best fixed-rate pacer
// in hindsight on the same API and seed. Each run has one instance, jobs
// of one unit, and a demand equal to the quota, from the limiter's options
// (its default initial rate unless ZooConfig.Limiter says otherwise).

// ZooQuotas are the zoo's quotas, in units per minute.
var ZooQuotas = []float64{900, 2100, 4500, 9000, 18000, 45000}

// DefaultZooSeeds are the zoo's seeds.
var DefaultZooSeeds = []uint64{1, 7, 23}

// DefaultZooIdle is the idle time of each API's idle row.
const DefaultZooIdle = 60 * time.Second

// The zoo's targets. A seed of a cell is feasible when its oracle holds at
// least FeasibleUtilization with at most OracleThrottles throttles. A
// feasible seed passes when utilization_steady ≥ the oracle's −
// FeasibleMargin, time_to_90_s ≤ FeasibleTimeTo90 and throttled ≤
// FeasibleThrottles + FeasibleThrottleShare × requests; any other seed
// passes when utilization_steady ≥ the oracle's − OtherMargin. A cell
// passes when all its seeds do.
const (
	FeasibleUtilization   = 0.95
	OracleThrottles       = 5
	FeasibleMargin        = 0.03
	FeasibleTimeTo90      = 90.0
	FeasibleThrottles     = 20
	FeasibleThrottleShare = 0.0005
	OtherMargin           = 0.05
)

// The oracle's search: the static rate's fractions of the quota on a grid
// of OracleStep from OracleMin to OracleMax.
const (
	OracleStep = 0.005
	OracleMin  = 0.3
	OracleMax  = 1.1
)

// ZooSetting is one setting of a model API in the zoo.
type ZooSetting struct {
	Name         string
	Window       time.Duration // the span of the quota; 60s when zero
	Burst        float64       // APILeaky: units a call may go ahead
	BurstFills   float64       // APIBucket: the bucket's size, in fills
	FillInterval time.Duration // APIBucket
	CountRefused bool          // APIWindow, APIFixed, APIWeighted
	// Idle > 0 makes the demand start after it. Such a setting's oracle
	// is its base setting's, with no idle time: a pacer in hindsight
	// starts when the jobs do.
	Idle time.Duration
}

// ZooSettings returns the settings of api in the zoo: two or three
// settings of its window or burst, and one with the demand starting after
// idle (none when idle is 0).
func ZooSettings(api API, idle time.Duration) []ZooSetting {
	var s []ZooSetting
	switch api {
	case APIWindow:
		s = []ZooSetting{
			{Name: "window 60s", Window: time.Minute},
			{Name: "window 10s", Window: 10 * time.Second},
			{Name: "window 10s, refused count", Window: 10 * time.Second, CountRefused: true},
		}
	case APIFixed:
		// A fixed window that counts refused calls refuses the same calls
		// of one unit as one that does not: a refused call finds the
		// window full, and it stays full until the reset either way.
		s = []ZooSetting{
			{Name: "window 60s", Window: time.Minute},
			{Name: "window 10s", Window: 10 * time.Second},
			{Name: "window 1s", Window: time.Second},
		}
	case APILeaky:
		for _, b := range []float64{3, 10, 30} {
			s = append(s, ZooSetting{Name: "burst " + strconv.FormatFloat(b, 'f', -1, 64), Burst: b})
		}
	case APIWeighted:
		// Sliding windows as Kong and Cloudflare estimate them, and
		// HAProxy's usual recipe (http_req_rate(10s), refused calls
		// counted).
		s = []ZooSetting{
			{Name: "window 60s", Window: time.Minute},
			{Name: "window 10s", Window: 10 * time.Second},
			{Name: "window 10s, refused count", Window: 10 * time.Second, CountRefused: true},
		}
	case APIBucket:
		s = []ZooSetting{
			{Name: "fill 1s, size 1 fill", FillInterval: time.Second, BurstFills: 1},
			{Name: "fill 1s, size 10 fills", FillInterval: time.Second, BurstFills: 10},
			{Name: "fill 60s, size 1 fill", FillInterval: time.Minute, BurstFills: 1},
		}
	}
	if idle > 0 && len(s) > 0 {
		base := s[0]
		if api == APILeaky {
			base = s[1] // burst 10
		}
		base.Idle = idle
		base.Name += ", idle " + shortDuration(idle)
		s = append(s, base)
	}
	return s
}

// base returns the setting with no idle time, whose oracle s shares.
func (s ZooSetting) base() ZooSetting {
	b := s
	b.Idle = 0
	b.Name = ""
	return b
}

// ZooConfig describes the grid of RunZoo.
type ZooConfig struct {
	APIs     []API         // default APIs
	Quotas   []float64     // units per minute; default ZooQuotas
	Modes    []Mode        // the controllers; default aimd and cubic
	Seeds    []uint64      // default DefaultZooSeeds
	Duration time.Duration // of each run; default 15m
	Idle     time.Duration // of each API's idle row; default DefaultZooIdle, < 0: no idle row
	Limiter  limiter.Config
	// Workers runs that many simulations at once; default
	// runtime.GOMAXPROCS(0).
	Workers int
	// Progress, when set, is called after each job (a run or an oracle's
	// search) with the jobs done and the total, one call at a time.
	Progress func(done, total int)
}

// DefaultZooConfig returns the full grid: every API, ZooQuotas, AIMD and
// CUBIC, seeds 1, 7 and 23, 15 minutes, idle rows of 60 s, the limiter's
// defaults.
func DefaultZooConfig() ZooConfig {
	return ZooConfig{
		APIs:     slices.Clone(APIs),
		Quotas:   slices.Clone(ZooQuotas),
		Modes:    []Mode{ModeAIMD, ModeCUBIC},
		Seeds:    slices.Clone(DefaultZooSeeds),
		Duration: 15 * time.Minute,
		Idle:     DefaultZooIdle,
		Limiter:  limiter.DefaultConfig(),
	}
}

// Oracle is the best fixed-rate pacer in hindsight for one API, quota,
// setting and seed: mode static at the rate, on OracleStep's grid of
// fractions of the quota, with the highest utilization_steady among those
// with at most OracleThrottles throttles.
type Oracle struct {
	// Found is false when no rate on the grid has at most OracleThrottles
	// throttles; the other fields are then zero.
	Found             bool    `json:"found"`
	Fraction          float64 `json:"fraction"` // the pacer's rate ÷ the quota
	UtilizationSteady float64 `json:"utilization_steady"`
	Throttled         int     `json:"throttled"`
	Runs              int     `json:"runs"` // static runs the search took
}

// ZooSeed is one seed of a cell: the run and its oracle.
type ZooSeed struct {
	Seed     uint64   `json:"seed"`
	Summary  Summary  `json:"summary"`
	Oracle   Oracle   `json:"oracle"`
	Feasible bool     `json:"feasible"`
	Pass     bool     `json:"pass"`
	Misses   []string `json:"misses,omitempty"` // the targets missed: utilization, time_to_90, throttled
}

// ZooCell is one API, quota, setting and controller, over the seeds.
type ZooCell struct {
	API     API       `json:"api"`
	Quota   float64   `json:"quota"` // units per minute
	Setting string    `json:"setting"`
	Mode    Mode      `json:"controller"`
	Seeds   []ZooSeed `json:"seeds"`
	Pass    bool      `json:"pass"`
}

// Zoo is the result of RunZoo; it is the JSON of `sluice simulate --zoo
// --json`.
type Zoo struct {
	Seeds     []uint64  `json:"seeds"`
	DurationS float64   `json:"duration_s"`
	Cells     []ZooCell `json:"cells"`
	Failing   int       `json:"failing"` // cells with a seed that misses its target
	// FailingFeasible counts the failing cells with a feasible seed that
	// misses; FailingOther those whose only misses are on other seeds.
	FailingFeasible int `json:"failing_feasible"`
	FailingOther    int `json:"failing_other"`
	FeasibleSeeds   int `json:"feasible_seeds"` // seeds of cells whose oracle is feasible
	TotalSeeds      int `json:"total_seeds"`
}

func (z *ZooConfig) setDefaults() {
	d := DefaultZooConfig()
	if len(z.APIs) == 0 {
		z.APIs = d.APIs
	}
	if len(z.Quotas) == 0 {
		z.Quotas = d.Quotas
	}
	if len(z.Modes) == 0 {
		z.Modes = d.Modes
	}
	if len(z.Seeds) == 0 {
		z.Seeds = d.Seeds
	}
	if z.Duration == 0 {
		z.Duration = d.Duration
	}
	if z.Idle == 0 {
		z.Idle = d.Idle
	}
	if z.Limiter == (limiter.Config{}) {
		z.Limiter = d.Limiter
	}
	if z.Workers <= 0 {
		z.Workers = runtime.GOMAXPROCS(0)
	}
}

// Config returns the run of one cell and seed: one instance, jobs of one
// unit, a demand equal to q units per minute, the API with the setting at
// a quota of q units per minute.
func (z ZooConfig) Config(api API, s ZooSetting, q float64, mode Mode, seed uint64) Config {
	c := DefaultConfig()
	c.Name = "zoo"
	c.Mode = mode
	c.Limiter = z.Limiter
	c.Duration = z.Duration
	c.Seed = seed
	c.API = api
	c.Window = cmp.Or(s.Window, DefaultWindowSpan)
	c.Quota = q * c.Window.Seconds() / 60
	c.CountRefused = s.CountRefused
	c.Instances = 1
	c.Costs = []float64{1}
	c.Demand = q
	c.Idle = s.Idle
	switch api {
	case APILeaky:
		c.BurstUnits = s.Burst
	case APIBucket:
		c.FillInterval = s.FillInterval
		c.BurstUnits = s.BurstFills * q * s.FillInterval.Seconds() / 60
	}
	if c.Idle+c.SteadyFrom >= c.Duration {
		c.SteadyFrom = 0
	}
	return c
}

// FindOracle searches the static rate for c (its Mode and initial rate are
// replaced): from the top of OracleStep's grid of fractions of the quota
// down to the first rate with at most OracleThrottles throttles, then by
// bisection between it and the next rate tried above it. It keeps the
// highest utilization_steady among the rates with at most OracleThrottles
// throttles, then climbs one step at a time while the next is feasible
// and better.
func FindOracle(c Config) (Oracle, error) {
	perMin := c.Quota * float64(time.Minute) / float64(c.Window)
	n := int(math.Round((OracleMax - OracleMin) / OracleStep))
	frac := func(i int) float64 { return round(OracleMin+float64(i)*OracleStep, 4) }
	index := func(f float64) int { return int(math.Round((f - OracleMin) / OracleStep)) }
	type point struct {
		util float64
		thr  int
	}
	seen := map[int]point{}
	var o Oracle
	feasible := func(i int) (bool, error) {
		p, ok := seen[i]
		if !ok {
			rc := c
			rc.Mode = ModeStatic
			rc.Limiter.InitialUnitsPerMinute = frac(i) * perMin
			res, err := Run(rc)
			if err != nil {
				return false, fmt.Errorf("sim: oracle at %v of the quota: %w", frac(i), err)
			}
			o.Runs++
			p = point{res.Summary.UtilizationSteady, res.Summary.Throttled}
			seen[i] = p
		}
		return p.thr <= OracleThrottles, nil
	}
	// lo is feasible and hi is not (or hi is past the grid).
	lo, hi := -1, n+1
	for _, f := range []float64{1, OracleMax, 0.98, 0.95, 0.9, 0.8, 0.6, OracleMin} {
		i := index(f)
		if i <= lo || i >= hi {
			continue
		}
		ok, err := feasible(i)
		if err != nil {
			return o, err
		}
		if ok {
			lo = i
			if f < 1 {
				break
			}
		} else {
			hi = i
		}
	}
	for lo >= 0 && hi <= n && hi-lo > 1 {
		mid := (lo + hi) / 2
		ok, err := feasible(mid)
		if err != nil {
			return o, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	best := -1
	for i, p := range seen {
		if p.thr > OracleThrottles {
			continue
		}
		if best < 0 || p.util > seen[best].util || p.util == seen[best].util && i > best {
			best = i
		}
	}
	// The throttles need not grow with the rate step by step: climb from
	// the best while the next step up is feasible and better.
	for best >= 0 && best < n {
		ok, err := feasible(best + 1)
		if err != nil {
			return o, err
		}
		if !ok || seen[best+1].util <= seen[best].util {
			break
		}
		best++
	}
	if best >= 0 {
		o.Found, o.Fraction = true, frac(best)
		o.UtilizationSteady, o.Throttled = seen[best].util, seen[best].thr
	}
	return o, nil
}

// judge marks a run against its oracle.
func judge(s Summary, o Oracle) (feasible bool, misses []string) {
	const eps = 1e-9
	feasible = o.Found && o.UtilizationSteady >= FeasibleUtilization-eps
	if !feasible {
		if s.UtilizationSteady < o.UtilizationSteady-OtherMargin-eps {
			misses = append(misses, "utilization")
		}
		return false, misses
	}
	if s.UtilizationSteady < o.UtilizationSteady-FeasibleMargin-eps {
		misses = append(misses, "utilization")
	}
	if s.TimeTo90Seconds == nil || *s.TimeTo90Seconds > FeasibleTimeTo90 {
		misses = append(misses, "time_to_90")
	}
	if float64(s.Throttled) > FeasibleThrottles+FeasibleThrottleShare*float64(s.Requests)+eps {
		misses = append(misses, "throttled")
	}
	return true, misses
}

type zooKey struct {
	api     API
	setting ZooSetting
	quota   float64
	seed    uint64
}

// zooJob is one simulation of the zoo: a cell's run for one seed, or the
// search of a setting's oracle.
type zooJob struct {
	cost   float64 // the quota: the run's length in events
	oracle bool
	key    zooKey
	mode   Mode
}

// RunZoo runs the grid of z, Workers simulations at a time, and marks
// every cell against its oracle. The result does not depend on Workers.
func RunZoo(ctx context.Context, z ZooConfig) (*Zoo, error) {
	z.setDefaults()
	jobs, cells, idx := z.plan()
	oracles, runs, err := z.run(ctx, jobs)
	if err != nil {
		return nil, err
	}
	seedIndex := func(seed uint64) int { return slices.Index(z.Seeds, seed) }
	for k, byMode := range runs {
		o := oracles[zooKey{k.api, k.setting.base(), k.quota, k.seed}]
		for m, s := range byMode {
			feasible, misses := judge(s, o)
			cells[idx[k][m]].Seeds[seedIndex(k.seed)] = ZooSeed{
				Seed: k.seed, Summary: s, Oracle: o, Feasible: feasible, Pass: len(misses) == 0, Misses: misses,
			}
		}
	}
	out := &Zoo{Seeds: slices.Clone(z.Seeds), DurationS: z.Duration.Seconds(), Cells: cells}
	out.tally()
	return out, nil
}

// plan lists the zoo's cells and the jobs that fill them, the longest
// first (an oracle's search is several runs), and where each run goes.
func (z ZooConfig) plan() ([]zooJob, []ZooCell, map[zooKey]map[Mode]int) {
	var (
		jobs  []zooJob
		cells []ZooCell
		idx   = map[zooKey]map[Mode]int{} // the cell of a run
	)
	for _, api := range z.APIs {
		for _, s := range ZooSettings(api, max(z.Idle, 0)) {
			for _, q := range z.Quotas {
				if s.Idle == 0 {
					for _, seed := range z.Seeds {
						jobs = append(jobs, zooJob{cost: q, oracle: true, key: zooKey{api, s.base(), q, seed}})
					}
				}
				for _, m := range z.Modes {
					cells = append(cells, ZooCell{API: api, Quota: q, Setting: s.Name, Mode: m})
					for _, seed := range z.Seeds {
						k := zooKey{api, s, q, seed}
						if idx[k] == nil {
							idx[k] = map[Mode]int{}
						}
						idx[k][m] = len(cells) - 1
						jobs = append(jobs, zooJob{cost: q, key: k, mode: m})
					}
				}
			}
		}
	}
	for i := range cells {
		cells[i].Seeds = make([]ZooSeed, len(z.Seeds))
	}
	slices.SortStableFunc(jobs, func(a, b zooJob) int {
		ca, cb := a.cost, b.cost
		if a.oracle {
			ca *= 4
		}
		if b.oracle {
			cb *= 4
		}
		return cmp.Compare(cb, ca)
	})
	return jobs, cells, idx
}

// run runs the jobs, Workers at a time, and returns the oracles and the
// runs' summaries by cell key and mode.
func (z ZooConfig) run(ctx context.Context, jobs []zooJob) (map[zooKey]Oracle, map[zooKey]map[Mode]Summary, error) {
	var (
		mu      sync.Mutex
		oracles = map[zooKey]Oracle{}
		runs    = map[zooKey]map[Mode]Summary{}
		done    int
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(z.Workers)
	for _, j := range jobs {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			k := j.key
			c := z.Config(k.api, k.setting, k.quota, j.mode, k.seed)
			var (
				o   Oracle
				res *Result
				err error
			)
			if j.oracle {
				o, err = FindOracle(c)
			} else {
				res, err = Run(c)
			}
			if err != nil {
				return fmt.Errorf("sim: zoo: %s, %s, quota %v, seed %d: %w", k.api, cmp.Or(k.setting.Name, "oracle"), k.quota, k.seed, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if j.oracle {
				oracles[k] = o
			} else {
				if runs[k] == nil {
					runs[k] = map[Mode]Summary{}
				}
				runs[k][j.mode] = res.Summary
			}
			done++
			if z.Progress != nil {
				z.Progress(done, len(jobs))
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	return oracles, runs, nil
}

// tally marks each cell and counts the zoo's totals.
func (out *Zoo) tally() {
	for i := range out.Cells {
		c := &out.Cells[i]
		c.Pass = true
		feasibleMiss := false
		for _, s := range c.Seeds {
			out.TotalSeeds++
			if s.Feasible {
				out.FeasibleSeeds++
			}
			if !s.Pass {
				c.Pass = false
				feasibleMiss = feasibleMiss || s.Feasible
			}
		}
		if !c.Pass {
			out.Failing++
			if feasibleMiss {
				out.FailingFeasible++
			} else {
				out.FailingOther++
			}
		}
	}
}
