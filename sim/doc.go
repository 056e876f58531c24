// Package sim is a deterministic, virtual-time simulator of sluice's
// adaptive limiter against a model API with a hidden quota, and that model
// API as an HTTP server.
//
// # The model API
//
// Window is the hidden quota: at most Quota units in any sliding window of
// Span (60 s by default). A request whose units would take the window over
// the quota is refused with a 429 and a Retry-After of the seconds until
// enough accepted units leave the window for it to fit. Window.Take returns
// that wait exactly; the header carries it rounded up to whole seconds
// (RetryAfterSeconds), so a client that honours it finds room unless
// another client took it first. Accepted units enter the window at the
// instant the request reaches the API. Server serves the same model over
// HTTP for `sluice testserver`.
//
// Config.API chooses among five models, each with time as an argument:
// Window (the sliding window), Leaky (nginx limit_req's leaky bucket),
// Fixed (a window that resets, as GitHub's), Bucket (Envoy's local rate
// limit, a token bucket refilled every fill interval) and Weighted (a
// sliding window estimated from two fixed periods, as HAProxy's stick-table
// rates and Kong's and Cloudflare's sliding windows count). Window, Fixed
// and Weighted can count refused calls against the quota
// (Config.CountRefused, as HAProxy's stick tables do), and any of them can
// refuse calls beyond a number in flight (Config.Concurrency).
//
// # The zoo
//
// RunZoo runs every model API at several quotas and settings under each
// controller, and marks every run against its Oracle, the best fixed-rate
// pacer in hindsight (FindOracle), by the targets of the zoo's constants.
//
// # The model clients
//
// Config.Instances instances each receive jobs as a Poisson process whose
// mean is Config.Demand units per minute; a job's cost is drawn from
// Config.Costs with equal odds (1, 2 or 5 by default). Each instance has
// its own limiter.Core — the limiter's deterministic core, the same code the
// concurrent limiter runs, never a copy of its rules — and a retry handler
// outside it: a throttled job is retried after the response's Retry-After,
// up to Config.MaxRetries times (3), and every retry waits on the limiter
// again. The round trip of a call is uniform in Latency ± Jitter
// (100 ms ± 20 ms); a request reaches the API after half of it. A job the
// limiter rejects (queue full, max_wait) is dropped and counted as
// rejected; a job whose last retry is throttled is dropped and counted as
// gave_up.
//
// Modes: aimd and cubic run the adaptive limiter with that controller;
// static runs the same bucket and queue at the initial rate and never feeds
// an outcome back (a fixed token bucket, as golang.org/x/time/rate is
// usually run); none sends every attempt at once (retries only).
//
// # Time and determinism
//
// Run is a discrete-event loop in virtual time: events at one instant are
// handled in the order they were scheduled, the limiter cores are driven
// through Acquire, Observe, SetInstanceCount and NextDue, and samples are
// taken at every whole second after everything else at that instant. All
// randomness comes from one math/rand/v2 PCG source seeded with
// Config.Seed, so a Config always gives the same Result, to the bit.
//
// # Measurements
//
// Utilization is the units the API accepted ÷ the capacity of the quota
// left to the simulated clients, integrated over the run from the end of
// Config.Idle (from SteadyFrom after it, the start of minute 2, for the
// steady figure). time_to_90_s and recovery_s read the quota meter: the
// units used in the trailing minute against the quota per minute at that
// second, sampled every second, whatever the API's window.
package sim
