package limiter_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/limiter"
)

// The Limiter on the real clock: wait for units, call, report the outcome.
func ExampleLimiter() {
	// The defaults: 600 units/min, paced (the adaptive law's bucket holds
	// 10 ms at the rate, at least one unit), starting empty (initial_fill
	// 0): the first units come at the initial rate. The first 429, with
	// nothing yet measured, halves the rate of startup's last doubling
	// and paces at 0.98 of that.
	cfg := limiter.DefaultConfig()
	l, err := limiter.New(cfg)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	ticket, err := l.Wait(ctx, 2) // a request that costs 2 units
	if err != nil {
		panic(err) // errors.Is(err, limiter.ErrRejected): queue full, max_wait or canceled
	}
	// ... send the request, then report what came back:
	l.Observe(ticket, call.Outcome{Kind: call.Throttle, Status: 429})

	// The bucket's level is not printed: it refills on the real clock,
	// so it depends on how long the lines above took.
	st := l.Stats()
	fmt.Printf("rate %.0f units/min, bucket capacity %.0f\n", st.Rate, st.Capacity)
	// Output:
	// rate 294 units/min, bucket capacity 1
}

// The deterministic Core in virtual time: the instants are arguments.
func ExampleCore() {
	start := time.Unix(0, 0)
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	// The classic rules (docs/limiter.md): a bucket of burst's time at
	// the rate, cut by 30% on a 429.
	cfg := limiter.DefaultConfig()
	cfg.SlowStart = false
	cfg.Burst = time.Second // capacity 10 units at 600 units/min (10 per second)
	cfg.InitialFill = 1     // full at start
	c, err := limiter.NewCore(cfg, start)
	if err != nil {
		panic(err)
	}

	first := c.Acquire(at(0), 10) // empties the bucket
	second := c.Acquire(at(0), 5) // must wait
	fmt.Println("first:", first.Status, "second:", second.Status)

	next, _ := c.NextDue() // when the bucket holds 5 units again
	c.Advance(next)
	for _, d := range c.Drain(nil) {
		fmt.Printf("request %d %s at %v\n", d.ID, d.Status, d.At.Sub(start))
	}

	// A 429 with Retry-After: 2 at t=1s cuts the rate by 30% and pauses.
	c.Observe(at(1), first.At, first.Units, call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: 2 * time.Second})
	until, _ := c.PausedUntil()
	fmt.Printf("rate %.0f, paused until %v\n", c.Rate(), until.Sub(start))
	// Output:
	// first: granted second: waiting
	// request 2 granted at 500ms
	// rate 420, paused until 3s
}

// Replay a trace in virtual time, as `sluice limiter replay` does. The
// command's Decode reads the options with the config file's names; this
// one sets the classic rules, a burst of one second and a full bucket.
func ExampleReplayer() {
	trace := `{"options": {"burst": "1s", "initial_fill": 1}}
{"at": 0, "op": "acquire", "id": "a", "units": 10}
{"at": 0, "op": "acquire", "id": "b", "units": 2}
{"at": 1, "op": "throttle", "id": "a", "retry_after": 4}
`
	r := limiter.Replayer{Decode: func([]byte) (limiter.Config, error) {
		cfg := limiter.DefaultConfig()
		cfg.Burst, cfg.InitialFill, cfg.SlowStart = time.Second, 1, false
		return cfg, cfg.Validate()
	}}
	if err := r.Run(strings.NewReader(trace), os.Stdout); err != nil {
		panic(err)
	}
	// Output:
	// {"at": 0, "op": "acquire", "rate": 600, "tokens": 0, "queue": 0, "paused_until": null, "granted": [{"id": "a", "at": 0}], "rejected": []}
	// {"at": 0, "op": "acquire", "rate": 600, "tokens": 0, "queue": 1, "paused_until": null, "granted": [], "rejected": []}
	// {"at": 1, "op": "throttle", "rate": 420, "tokens": 7, "queue": 0, "paused_until": 5, "granted": [{"id": "b", "at": 0.2}], "rejected": []}
}
