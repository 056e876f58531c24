package limiter_test

import (
	"context"
	"fmt"
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
