// Package config is sluice's config file: its format, its defaults and the
// checks that `sluice config validate` and `sluice run` share.
//
// The file is YAML, decoded strictly by internal/schema (an unknown key is an
// error naming its line, with a suggestion). Scalar values may use ${VAR} and
// ${VAR:-default}; $${ is a literal ${. Values taken from the environment and
// target header values are secrets: no error prints them.
//
// Each section converts to its library's config (limiter.Config is decoded
// in place), and each library's Validate holds its own rules; this package
// adds the section path and the line, and holds only the rules that span
// sections. Load runs every check at once and reports every problem.
package config

import (
	"net/http"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/sinks/httpapi"
	"github.com/sluicehq/sluice/sinks/pubsubout"
	"github.com/sluicehq/sluice/worker"
)

// Config is the whole config file. Every section and every field is
// optional; what is missing keeps its default (Default).
//
// Each option's doc tag is its description in `sluice config schema` and
// in docs/configuration.md's option tables (go generate ./internal/app/config
// writes both); its enum tag lists the values of a closed set. See
// internal/schema for the tags.
type Config struct {
	Source      Source  `yaml:"source" doc:"The queue the jobs come from."`
	Target      Target  `yaml:"target" doc:"The API the jobs are sent to."`
	Jobs        Jobs    `yaml:"jobs" doc:"How queue messages become requests."`
	Limiter     Limiter `yaml:"limiter" doc:"The adaptive rate limiter. Rates are units per minute for the whole budget, shared by all instances."`
	Worker      Worker  `yaml:"worker" doc:"How many jobs a worker holds, and how it retries, redelivers and stops."`
	Results     Results `yaml:"results" doc:"Where the results of successful jobs go."`
	DeadLetters Output  `yaml:"dead_letters" doc:"Where dead letters go, with the kinds of results. A dead letter is stored before its job is acked. With source.kind pubsub and no dead_letters section, the kind is none: the source's dead_letter_topic keeps a record of each terminated job."`
	Metrics     Metrics `yaml:"metrics" doc:"The runtime endpoints: /metrics, /healthz, /readyz and /debug/pprof."`
	Ops         Ops     `yaml:"ops" doc:"How /readyz judges the worker."`
	Log         Log     `yaml:"log" doc:"The format and level of the log."`
	// Observability is where spans are exported (OTLP/HTTP).
	Observability tracing.Config `yaml:"observability" doc:"OpenTelemetry spans: one per delivery of a job, with one child per attempt."`

	// Lines maps a field path ("limiter.burst") to the line it was set on.
	Lines map[string]int `yaml:"-"`
	// From maps a field path set over the file to where it was set: a
	// --set argument ("--set worker.max_attempts"), a flag ("--rate") or
	// an environment variable ("NATS_URL"). See SetBy.
	From map[string]string `yaml:"-"`
	// Secrets are values that must never be printed: target header values,
	// NATS passwords and tokens, and every value taken from the environment.
	Secrets []string `yaml:"-"`
}

// Target is the `target:` section: the API the jobs are sent to.
type Target struct {
	BaseURL          string        `yaml:"base_url" doc:"Required by run. Every request goes to this scheme, host and port, under this path; a job's path is joined under it and may never leave it."`
	Timeout          time.Duration `yaml:"timeout" doc:"Bounds one request, from sending it to the last byte of the body read."`
	MaxResponseBytes int64         `yaml:"max_response_bytes" doc:"The most of a response body kept (results, dead-letter excerpts); the rest is discarded."`
	// Headers are set on every request. Their values are secret: they may
	// come from ${ENV} and are never printed.
	Headers                  map[string]string  `yaml:"headers" doc:"Set on every request, replacing a job's header of the same name. Values are secret: never logged or printed; read them from the environment, such as Authorization: \"Bearer ${API_TOKEN}\"."`
	AllowJobHeaders          []string           `yaml:"allow_job_headers" doc:"Job headers let through that would otherwise be dropped (Authorization is the one such header). Connection and framing headers (Host, Content-Length, hop-by-hop) are always dropped and cannot be listed."`
	RetryAfterHeaders        []RetryAfterHeader `yaml:"retry_after_headers" doc:"Extra headers that say how long to wait after a throttle, checked in order before Retry-After, such as {name: x-ms-retry-after-ms, unit: milliseconds}."`
	ThrottleStatuses         []int              `yaml:"throttle_statuses" doc:"Statuses that are always a throttle ([] means none)."`
	ThrottleStatusesWithWait []int              `yaml:"throttle_statuses_with_wait" doc:"Statuses that are a throttle when they carry a wait header (Retry-After or one of retry_after_headers)."`
	MaxRetryAfter            time.Duration      `yaml:"max_retry_after" doc:"Cap on any wait read from a response."`
	UserAgent                string             `yaml:"user_agent" doc:"Sent when neither headers nor the job set a User-Agent."`
	// RateLimitHeaders names the quota headers the limiter plans with:
	// none (default), ietf or x-ratelimit; RateLimitReset says how
	// X-RateLimit-Reset reads: delta (default) or unix.
	RateLimitHeaders string `yaml:"rate_limit_headers" enum:"none,ietf,x-ratelimit;empty" doc:"Quota headers the limiter plans with (docs/target.md): none, ietf (RateLimit, RateLimit-Policy, RateLimit-Limit/-Remaining/-Reset) or x-ratelimit (X-RateLimit-Limit/-Remaining/-Reset). Their numbers are taken to be job units."`
	RateLimitReset   string `yaml:"rate_limit_reset" enum:"delta,unix;empty" doc:"How X-RateLimit-Reset reads: delta (seconds from now) or unix (a Unix time, as GitHub sends; with rate_limit_headers x-ratelimit only)."`
	// LogURLPath shows URL paths in logs; by default they are secret.
	LogURLPath bool `yaml:"log_url_path" doc:"URL paths (base_url's and the job's) are secret by default: logs show scheme://host/[redacted]. true shows them."`
	// SuccessStatuses are the 3xx statuses that count as a success; any
	// other 3xx is dead-lettered as redirect (worker.Config.SuccessStatuses).
	SuccessStatuses []int `yaml:"success_statuses" doc:"3xx statuses that count as a success. Redirects are never followed: any other 3xx is dead-lettered with reason redirect."`
	// IdempotencyHeader carries the job id on every attempt; "" sends none.
	IdempotencyHeader string `yaml:"idempotency_header" doc:"Sent on every attempt with the job id, the same on every redelivery, so that the target can deduplicate; \"\" sends none."`
}

// RetryAfterHeader is one entry of target.retry_after_headers.
type RetryAfterHeader struct {
	Name string `yaml:"name" doc:"The response header's name."`
	Unit string `yaml:"unit" enum:"seconds,milliseconds,unix,s,ms,unix_seconds;anycase;empty" default:"seconds" doc:"How its value reads: seconds to wait, milliseconds to wait, or unix (a Unix time in seconds)."`
}

// Jobs is the `jobs:` section: how messages become requests.
type Jobs struct {
	Envelope         string             `yaml:"envelope" enum:"json,raw;empty" doc:"json: each message is a job envelope {id, type, method, path, headers, body or body_base64, cost}, every field optional. raw: the whole message is the request body, and the type comes from the message header Sluice-Type."`
	Strict           bool               `yaml:"strict" doc:"Reject (dead-letter) jobs whose type is not listed under types."`
	TrustJobCost     bool               `yaml:"trust_job_cost" doc:"Let an envelope's cost replace its type's cost. A negative, NaN or non-number cost makes a job invalid either way."`
	MaxEnvelopeBytes int                `yaml:"max_envelope_bytes" doc:"Larger messages are dead-lettered without being decoded."`
	DefaultType      string             `yaml:"default_type" doc:"The type of a job that names none, and whose settings apply to types that are not listed (when strict is off)."`
	Types            map[string]JobType `yaml:"types" doc:"Per type name: the request's method and path, and the job's cost in limiter units. A job's own method and path replace these. A type not listed here takes default_type's settings if that is listed, else POST / at 1 unit."`
}

// JobType is one entry of jobs.types.
type JobType struct {
	Method string   `yaml:"method" enum:"GET,HEAD,POST,PUT,PATCH,DELETE,OPTIONS;open" default:"POST" doc:"The request method, in any letter case; any other method token (such as PROPFIND) is accepted too."`
	Path   string   `yaml:"path" default:"/" doc:"The path under target.base_url, starting with a single /."`
	Cost   *float64 `yaml:"cost" default:"1" doc:"Limiter units per job of this type; 0 is free (never waits)."`
}

// Limiter is the `limiter:` section: the limiter's own options, and how the
// workers sharing the budget find their share of it.
type Limiter struct {
	limiter.Config `yaml:",inline"`
	Share          Share `yaml:"share" doc:"How the workers sharing one budget find their share of it (docs/scaling.md)."`
}

// Worker is the `worker:` section.
type Worker struct {
	ID                 string        `yaml:"id" doc:"Names this worker in dead-letter records, logs and the shared budget. Empty: the host name and the process id (hostname-pid)."`
	MaxInFlight        int           `yaml:"max_in_flight" doc:"The most jobs held at once (received and not settled). Keep it at most limiter.queue_limit."`
	MaxAttempts        int           `yaml:"max_attempts" doc:"Calls to the target per delivery of a job, for throttles, 5xx, network errors and timeouts."`
	Backoff            Backoff       `yaml:"backoff" doc:"Wait between attempts: exponential with full jitter, never shorter than the response's Retry-After."`
	MaxDeliveries      int           `yaml:"max_deliveries" doc:"A job whose attempts all failed is redelivered later; on this delivery it is dead-lettered instead."`
	MaxRedeliveryDelay time.Duration `yaml:"max_redelivery_delay" doc:"Cap on the redelivery delay, max(Retry-After, backoff by delivery count)."`
	RejectedDelay      time.Duration `yaml:"rejected_delay" doc:"Redelivery delay of a job the limiter rejected (queue full, max wait)."`
	ShutdownTimeout    time.Duration `yaml:"shutdown_timeout" doc:"On SIGTERM or SIGINT, how long requests already sent may finish. Jobs still waiting are handed back at once; a second signal exits at once."`
}

// Backoff is `worker.backoff:`.
type Backoff struct {
	Base time.Duration `yaml:"base" doc:"After the n-th failed attempt the worker waits a random time up to min(cap, base × 2^(n-1))."`
	Cap  time.Duration `yaml:"cap" doc:"The longest wait between two attempts."`
}

// Output kinds accepted in results.kind and dead_letters.kind.
const (
	OutputNone   = "none"
	OutputNATS   = "nats"
	OutputPubSub = "pubsub"
	OutputJSONL  = "jsonl"
)

// Output is the `dead_letters:` section: where records go.
type Output struct {
	Kind    string `yaml:"kind" enum:"none,nats,pubsub,jsonl" doc:"none; nats (the source's JetStream server; needs source.kind jetstream); pubsub (a topic; needs source.kind pubsub); jsonl (a file)."`
	Subject string `yaml:"subject" doc:"nats: the subject. Empty: the dead-letter subject next to the job stream (source.jetstream.dead_letter_subject, sluice.dead by default)."`
	Topic   string `yaml:"topic" doc:"pubsub: the topic."`
	// Subscription keeps a pubsub output's records (Pub/Sub drops what
	// a topic with no subscription receives); source.pubsub.setup creates
	// it with the topic. Default "<topic id>-records".
	Subscription string `yaml:"subscription" doc:"pubsub: the subscription that keeps the records, and that sluice dlq replay reads (Pub/Sub drops what a topic with no subscription receives); source.pubsub.setup creates it. Empty: the topic's id followed by -records."`
	Path         string `yaml:"path" doc:"jsonl: the file, one record per line."`
}

// PubSub is the library config of a pubsub output; setup creates its
// topic and subscription.
func (o Output) PubSub(setup bool) pubsubout.Config {
	return pubsubout.Config{Topic: o.Topic, Subscription: o.Subscription, CreateTopic: setup}
}

// Results is the `results:` section.
type Results struct {
	Kind         string `yaml:"kind" enum:"none,nats,pubsub,jsonl" doc:"none; nats (a subject on the source's JetStream server, stored by a stream; needs source.kind jetstream); pubsub (a topic; needs source.kind pubsub); jsonl (a file)."`
	Subject      string `yaml:"subject" doc:"nats: the subject."`
	Topic        string `yaml:"topic" doc:"pubsub: the topic."`
	Subscription string `yaml:"subscription" doc:"pubsub: the subscription that keeps the records (Pub/Sub drops what a topic with no subscription receives); source.pubsub.setup creates it. Empty: the topic's id followed by -records."`
	Path         string `yaml:"path" doc:"jsonl: the file, one record per line."`
	// Headers are the response headers kept in a result record.
	Headers []string `yaml:"headers" doc:"Response headers kept in a result record."`
}

// Output is where the results go.
func (r Results) Output() Output {
	return Output{Kind: r.Kind, Subject: r.Subject, Topic: r.Topic, Subscription: r.Subscription, Path: r.Path}
}

// Log formats accepted in log.format and --log-format.
const (
	LogFormatAuto = "auto" // text on a terminal, JSON otherwise
	LogFormatText = "text"
	LogFormatJSON = "json"
)

// Log is the `log:` section.
type Log struct {
	Format string `yaml:"format" enum:"auto,text,json" doc:"auto (text on a terminal, JSON otherwise), text or json."`
	Level  string `yaml:"level" enum:"debug,info,warn,error,warning;anycase;empty" doc:"debug, info, warn (or warning) or error, in any letter case."`
}

// Defaults of the sections this package owns.
const (
	DefaultMaxInFlight = 64
	DefaultJobType     = "default"
)

// Default returns the config of an empty file.
func Default() Config {
	return Config{
		Source: defaultSource(),
		Target: Target{
			Timeout:           httpapi.DefaultTimeout,
			MaxResponseBytes:  httpapi.DefaultMaxResponseBytes,
			MaxRetryAfter:     call.DefaultMaxRetryAfter,
			UserAgent:         httpapi.DefaultUserAgent,
			IdempotencyHeader: httpapi.DefaultIdempotencyHeader,
			// The classifier's own defaults (nil means these), written out
			// so that the schema and the docs show them.
			ThrottleStatuses:         []int{http.StatusTooManyRequests},
			ThrottleStatusesWithWait: []int{http.StatusServiceUnavailable},
			RateLimitHeaders:         "none",
			RateLimitReset:           "delta",
		},
		Jobs: Jobs{
			Envelope:         worker.EnvelopeJSON,
			MaxEnvelopeBytes: worker.DefaultMaxEnvelopeBytes,
			DefaultType:      DefaultJobType,
		},
		Limiter: Limiter{Config: limiter.DefaultConfig(), Share: defaultShare()},
		Worker: Worker{
			MaxInFlight:        DefaultMaxInFlight,
			MaxAttempts:        worker.DefaultMaxAttempts,
			Backoff:            Backoff{Base: worker.DefaultBackoffBase, Cap: worker.DefaultBackoffCap},
			MaxDeliveries:      worker.DefaultMaxDeliveries,
			MaxRedeliveryDelay: worker.DefaultMaxRedeliveryDelay,
			RejectedDelay:      worker.DefaultRejectedDelay,
			ShutdownTimeout:    worker.DefaultShutdownTimeout,
		},
		Results:     Results{Kind: OutputNone, Headers: []string{"Content-Type"}},
		DeadLetters: Output{Kind: OutputNATS},
		Metrics:     Metrics{Listen: DefaultOpsListen},
		Ops:         Ops{TargetUnreadyAfter: DefaultTargetUnreadyAfter},
		Log:         Log{Format: LogFormatAuto, Level: "info"},
		Lines:       map[string]int{},
	}
}
