package config

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/field"
	"github.com/sluicehq/sluice/sinks/httpapi"
	"github.com/sluicehq/sluice/worker"
)

// HTTPConfig converts the target section (with worker.max_in_flight as the
// connection pool and results.headers as the kept response headers) to an
// httpapi.Config. The error lists the retry_after_headers units it could
// not read, with paths relative to the section; the rest is checked by
// httpapi.Config.Validate.
func (c *Config) HTTPConfig() (httpapi.Config, error) {
	t := c.Target
	hc := httpapi.Config{
		BaseURL:           t.BaseURL,
		Timeout:           t.Timeout,
		MaxResponseBytes:  t.MaxResponseBytes,
		MaxConns:          c.Worker.MaxInFlight,
		Headers:           t.Headers,
		Secrets:           c.Secrets,
		AllowJobHeaders:   t.AllowJobHeaders,
		ResponseHeaders:   c.Results.Headers,
		UserAgent:         t.UserAgent,
		LogURLPath:        t.LogURLPath,
		IdempotencyHeader: t.IdempotencyHeader,
		Classifier: call.Classifier{
			ThrottleStatuses:         t.ThrottleStatuses,
			ThrottleStatusesWithWait: t.ThrottleStatusesWithWait,
			MaxRetryAfter:            t.MaxRetryAfter,
		},
	}
	if hc.ResponseHeaders == nil {
		hc.ResponseHeaders = []string{}
	}
	var errs []error
	for i, h := range t.RetryAfterHeaders {
		unit := call.UnitSeconds
		if h.Unit != "" {
			u, err := call.ParseHeaderUnit(h.Unit)
			if err != nil {
				errs = append(errs, field.Invalid(fmt.Sprintf("retry_after_headers[%d].unit", i), "must be seconds, milliseconds or unix, got %q", h.Unit))
				continue
			}
			unit = u
		}
		hc.Classifier.RetryAfterHeaders = append(hc.Classifier.RetryAfterHeaders, call.RetryAfterHeader{Name: h.Name, Unit: unit})
	}
	rl, err := rateLimitHeaders(t.RateLimitHeaders, t.RateLimitReset)
	errs = append(errs, err)
	hc.Classifier.RateLimitHeaders = rl
	return hc, errors.Join(errs...)
}

// rateLimitHeaders reads target.rate_limit_headers and
// target.rate_limit_reset (docs/target.md, "Quota headers").
func rateLimitHeaders(format, reset string) (call.RateLimitHeaders, error) {
	var rl call.RateLimitHeaders
	if format != "" {
		f, err := call.ParseRateLimitFormat(format)
		if err != nil {
			return rl, field.Invalid("rate_limit_headers", "must be none, ietf or x-ratelimit, got %q", format)
		}
		rl.Format = f
	}
	switch reset {
	case "", "delta":
	case "unix":
		if rl.Format != call.RateLimitX {
			return rl, field.Invalid("rate_limit_reset", "unix applies to rate_limit_headers: x-ratelimit only, got rate_limit_headers: %v", rl.Format)
		}
		rl.Reset = call.UnitUnixTime
	default:
		return rl, field.Invalid("rate_limit_reset", "must be delta or unix, got %q", reset)
	}
	return rl, nil
}

// WorkerConfig converts the worker, jobs and results sections; ackWait is
// the source's ack deadline.
func (c *Config) WorkerConfig(ackWait time.Duration) worker.Config {
	w := c.Worker
	types := make(map[string]worker.JobType, len(c.Jobs.Types))
	for name, t := range c.Jobs.Types {
		cost := 1.0
		if t.Cost != nil {
			cost = *t.Cost
		}
		types[name] = worker.JobType{Method: strings.ToUpper(t.Method), Path: t.Path, Cost: cost}
	}
	return worker.Config{
		ID:                 w.ID,
		MaxInFlight:        w.MaxInFlight,
		MaxAttempts:        w.MaxAttempts,
		BackoffBase:        w.Backoff.Base,
		BackoffCap:         w.Backoff.Cap,
		MaxDeliveries:      w.MaxDeliveries,
		MaxRedeliveryDelay: w.MaxRedeliveryDelay,
		RejectedDelay:      w.RejectedDelay,
		ShutdownTimeout:    w.ShutdownTimeout,
		AckWait:            ackWait,
		ResultHeaders:      c.Results.Headers,
		SuccessStatuses:    c.Target.SuccessStatuses,
		Jobs: worker.JobsConfig{
			Envelope:         c.Jobs.Envelope,
			Strict:           c.Jobs.Strict,
			TrustJobCost:     c.Jobs.TrustJobCost,
			MaxEnvelopeBytes: c.Jobs.MaxEnvelopeBytes,
			DefaultType:      c.Jobs.DefaultType,
			Types:            types,
		},
	}
}

// ParseLogLevel reads log.level: debug, info, warn or error.
func ParseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("log.level: must be debug, info, warn or error, got %q", s)
}
