package sim

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/limiter"
)

// traceConfig is a small run with every kind of limiter event: waits,
// grants, max_wait and queue_full rejections, throttles with pauses, a
// quota drop, an instance joining, and a demand change.
func traceConfig(mode Mode) Config {
	c := DefaultConfig()
	c.Mode = mode
	c.Duration = 4 * time.Minute
	c.Quota = 600
	c.Demand = 500
	c.Limiter.InitialUnitsPerMinute = 400
	c.Limiter.QueueLimit = 40
	c.Limiter.MaxWait = 20 * time.Second
	c.Seed = 7
	c.Events = []Event{
		{At: 90 * time.Second, Kind: QuotaDrop, For: 30 * time.Second, Fraction: 0.5},
		{At: 150 * time.Second, Kind: InstanceCount, Count: 3},
		{At: 200 * time.Second, Kind: DemandChange, Demand: 200},
	}
	return c
}

type shellResult struct {
	tk  limiter.Ticket
	err error
}

// TestTraceMatchesShell replays the calls the simulator made on each
// instance's limiter core against the concurrent limiter (limiter.Limiter)
// on the fake clock of testing/synctest, and checks that both give the same
// rate after every call, and the same grants and rejections at the same
// instants.
func TestTraceMatchesShell(t *testing.T) {
	for _, mode := range []Mode{ModeAIMD, ModeCUBIC} {
		t.Run(string(mode), func(t *testing.T) {
			cfg := traceConfig(mode)
			var ops []coreOp
			if _, err := run(cfg, func(op coreOp) { ops = append(ops, op) }); err != nil {
				t.Fatal(err)
			}
			count := map[string]int{}
			for _, op := range ops {
				count[op.Op]++
				if op.Op == "observe" && op.Outcome.Kind == call.Throttle {
					count["throttle"]++
				}
				if op.Op == "reject" || op.Op == "acquire" && op.Status == limiter.Rejected {
					count["rejections"]++
				}
			}
			for _, k := range []string{"new", "acquire", "grant", "throttle", "rejections", "instances"} {
				if count[k] == 0 {
					t.Fatalf("the trace has no %q; counts %v", k, count)
				}
			}
			t.Logf("%d ops: %v", len(ops), count)
			replayOnShell(t, cfg, ops)
		})
	}
}

func replayOnShell(t *testing.T, cfg Config, ops []coreOp) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		type key struct {
			inst int
			id   uint64
		}
		lims := map[int]*limiter.Limiter{}
		waits := map[key]chan shellResult{}
		results := map[key]shellResult{}
		result := func(k key) (shellResult, bool) {
			if r, ok := results[k]; ok {
				return r, true
			}
			select {
			case r := <-waits[k]:
				results[k] = r
				return r, true
			default:
				return shellResult{}, false
			}
		}
		for i, op := range ops {
			at := start.Add(op.At)
			if d := time.Until(at); d > 0 {
				time.Sleep(d)
			}
			synctest.Wait()
			k := key{op.Inst, op.ID}
			l := lims[op.Inst]
			switch op.Op {
			case "new":
				lc := cfg.limiterConfig()
				lc.Instances = op.Count
				var err error
				if lims[op.Inst], err = limiter.New(lc); err != nil {
					t.Fatal(err)
				}
				l = lims[op.Inst]
			case "acquire":
				ch := make(chan shellResult, 1)
				waits[k] = ch
				go func() {
					tk, err := l.Wait(ctx, op.Units)
					ch <- shellResult{tk, err}
				}()
				synctest.Wait()
				r, done := result(k)
				switch {
				case op.Status == limiter.Waiting && done:
					t.Fatalf("op %d %+v: the shell decided at once: %+v", i, op, r)
				case op.Status == limiter.Granted && (!done || r.err != nil || !r.tk.Granted.Equal(at)):
					t.Fatalf("op %d %+v: want a grant at once, shell: done %v %+v", i, op, done, r)
				case op.Status == limiter.Rejected && (!done || !errors.Is(r.err, limiter.ErrRejected)):
					t.Fatalf("op %d %+v: want queue_full at once, shell: done %v %+v", i, op, done, r)
				}
			case "grant", "reject":
				r, done := result(k)
				if !done {
					t.Fatalf("op %d %+v: the shell has not decided", i, op)
				}
				if op.Op == "grant" && (r.err != nil || !r.tk.Granted.Equal(at)) {
					t.Fatalf("op %d %+v: shell gave %v at %v", i, op, r.err, r.tk.Granted.Sub(start))
				}
				var re *limiter.RejectedError
				if op.Op == "reject" && (!errors.As(r.err, &re) || re.Reason != op.Reason) {
					t.Fatalf("op %d %+v: shell gave %+v", i, op, r)
				}
				continue // the rate is checked after calls, not decisions
			case "observe":
				r, done := result(k)
				if !done || r.err != nil {
					t.Fatalf("op %d %+v: no shell ticket: %+v", i, op, r)
				}
				if !r.tk.Granted.Equal(start.Add(op.SentAt)) {
					t.Fatalf("op %d %+v: shell ticket granted at %v", i, op, r.tk.Granted.Sub(start))
				}
				l.Observe(r.tk, op.Outcome)
				synctest.Wait()
			case "instances":
				if err := l.SetInstanceCount(op.Count); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
			default:
				t.Fatalf("unknown op %q", op.Op)
			}
			if got := lims[op.Inst].Rate(); got != op.Rate {
				t.Fatalf("op %d %+v: shell rate %v, simulator %v", i, op, got, op.Rate)
			}
		}
		cancel()
	})
}
