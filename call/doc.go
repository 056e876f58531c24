// Package call is the shared vocabulary of one call to the target API: the
// Request the worker builds from a job, the Response the target gives, and
// its classification (an Outcome of a Kind, with the wait a throttle asked
// for), which the worker settles jobs by and the limiter adapts its rate to.
//
// The worker, the HTTP target (sinks/httpapi) and the limiter all use these
// types, so no layer converts one struct into an identical one. The
// package imports nothing of the project but the error vocabulary of
// config checks (package field): CheckMethod and CheckPath are the one
// place where the rules of a request's method and path are written.
//
// A Classifier turns a status and headers into an Outcome: 429 is a
// throttle, and so is a 503 with a wait (Retry-After or a configured
// header such as x-ms-retry-after-ms or X-RateLimit-Reset); ParseRetryAfter
// reads a Retry-After value, capped at DefaultMaxRetryAfter. Every type
// here is a value, safe for concurrent use.
package call
