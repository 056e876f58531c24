package config

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/field"
	"github.com/sluicehq/sluice/sinks/jsonl"
	"github.com/sluicehq/sluice/sinks/natsout"
)

// Check runs every rule on c: each library's Validate on the config
// converted for it, with its problems placed at the file's paths, the
// rules of the keys only the file has, and the rules across sections.
// needTarget requires target.base_url. It returns every problem as joined
// *field.Error values with paths from the file's root.
func (c *Config) Check(needTarget bool) error {
	errs := []error{c.Source.Check(), field.Under("observability", c.Observability.Validate())}

	if c.Target.BaseURL == "" && needTarget {
		errs = append(errs, field.Invalid("target.base_url", "required: the API's base URL, such as https://api.example.com/v1"))
	}
	hc, err := c.HTTPConfig()
	errs = append(errs, field.Under("target", err))
	if c.Target.BaseURL != "" {
		errs = append(errs, placeTarget(hc.Validate()))
	}

	errs = append(errs, c.checkSet(), c.checkCosts())
	errs = append(errs, placeWorker(c.WorkerConfig(0).Validate()))

	errs = append(errs, field.Under("limiter", c.Limiter.Config.Validate()))
	errs = append(errs, c.Limiter.Share.check(c))
	if !c.Limiter.Disabled && c.Limiter.QueueLimit > 0 && c.Worker.MaxInFlight > c.Limiter.QueueLimit {
		errs = append(errs, field.Invalid("worker.max_in_flight", "must be <= limiter.queue_limit (%d) so that waiting jobs are not rejected, got %d",
			c.Limiter.QueueLimit, c.Worker.MaxInFlight))
	}

	errs = append(errs, field.Under("results", c.Results.Output().check("results")))
	errs = append(errs, field.Under("dead_letters", c.DeadLetters.check("dead_letters")))
	if c.DeadLetters.Kind == OutputNATS && c.Source.Kind != SourceJetStream {
		errs = append(errs, field.Invalid("dead_letters.kind", "%q needs source.kind %q (the records go to the same server), got source.kind %q",
			OutputNATS, SourceJetStream, c.Source.Kind))
	}
	if c.Results.Kind == OutputNATS && c.Source.Kind != SourceJetStream {
		errs = append(errs, field.Invalid("results.kind", "%q needs source.kind %q, got source.kind %q", OutputNATS, SourceJetStream, c.Source.Kind))
	}

	errs = append(errs, field.Under("metrics", c.Metrics.Check()))
	errs = append(errs, field.Under("ops", c.Ops.Check()))
	switch c.Log.Format {
	case LogFormatAuto, LogFormatText, LogFormatJSON:
	default:
		errs = append(errs, field.Invalid("log.format", `must be "auto", "text" or "json", got %q`, c.Log.Format))
	}
	if _, err := ParseLogLevel(c.Log.Level); err != nil {
		errs = append(errs, field.Invalid("log.level", `must be "debug", "info", "warn" or "error", got %q`, c.Log.Level))
	}
	return errors.Join(errs...)
}

// checkSet refuses a zero where the libraries read zero as "the default":
// in the file, the defaults are already in place, so a zero was written.
func (c *Config) checkSet() error {
	var errs []error
	w := c.Worker
	for _, f := range []struct {
		path string
		zero bool
		v    any
	}{
		{"worker.max_in_flight", w.MaxInFlight == 0, 0}, {"worker.max_attempts", w.MaxAttempts == 0, 0},
		{"worker.max_deliveries", w.MaxDeliveries == 0, 0},
		{"worker.backoff.base", w.Backoff.Base == 0, time.Duration(0)}, {"worker.backoff.cap", w.Backoff.Cap == 0, time.Duration(0)},
		{"worker.max_redelivery_delay", w.MaxRedeliveryDelay == 0, time.Duration(0)},
		{"worker.rejected_delay", w.RejectedDelay == 0, time.Duration(0)},
		{"worker.shutdown_timeout", w.ShutdownTimeout == 0, time.Duration(0)},
		{"jobs.max_envelope_bytes", c.Jobs.MaxEnvelopeBytes == 0, 0},
	} {
		if f.zero {
			errs = append(errs, field.Invalid(f.path, "must be > 0, got %v", f.v))
		}
	}
	if c.Jobs.DefaultType == "" {
		errs = append(errs, field.Invalid("jobs.default_type", "must not be empty"))
	}
	return errors.Join(errs...)
}

// checkCosts refuses a job type whose cost the limiter could never grant
// within max_wait: the worker would dead-letter every job of it (bad_cost).
func (c *Config) checkCosts() error {
	if c.Limiter.Config.Validate() != nil {
		return nil // the limiter's own problems are reported; no bound to check against
	}
	bound := c.Limiter.Config.MaxCost()
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(c.Jobs.Types)) {
		if cost := c.Jobs.Types[name].Cost; cost != nil && *cost >= 0 && *cost > bound {
			errs = append(errs, field.Invalid(field.Join(field.Join("jobs.types", name), "cost"),
				"must be <= the limiter's cost bound %g (max_units_per_minute / instances over max_wait), got %g", bound, *cost))
		}
	}
	return errors.Join(errs...)
}

// placeTarget puts the problems of httpapi.Config.Validate at the file's
// paths. max_conns and response_headers come from worker.max_in_flight and
// results.headers, which the worker's Validate reports.
func placeTarget(err error) error {
	var out []error
	for _, fe := range field.Flatten(err) {
		if fe.Field == "max_conns" || strings.HasPrefix(fe.Field, "response_headers") {
			continue
		}
		out = append(out, &field.Error{Field: field.Join("target", fe.Field), Reason: fe.Reason})
	}
	return errors.Join(out...)
}

// placeWorker puts the problems of worker.Config.Validate at the file's
// paths: the jobs options are the jobs section, the result headers are
// results.headers, the rest is the worker section.
func placeWorker(err error) error {
	var out []error
	for _, fe := range field.Flatten(err) {
		p := fe.Field
		switch {
		case strings.HasPrefix(p, "jobs."):
		case strings.HasPrefix(p, "result_headers"):
			p = "results.headers" + strings.TrimPrefix(p, "result_headers")
		default:
			p = field.Join("worker", p)
		}
		out = append(out, &field.Error{Field: p, Reason: fe.Reason})
	}
	return errors.Join(out...)
}

// check checks an output section; paths are relative to it.
func (o Output) check(section string) error {
	switch o.Kind {
	case OutputNone:
		return nil
	case OutputNATS:
		if o.Subject == "" {
			return nil // the source's subject, checked there
		}
		return natsout.Config{Subject: o.Subject}.Validate()
	case OutputPubSub:
		return o.PubSub(false).Validate()
	case OutputJSONL:
		return jsonl.Config{Path: o.Path}.Validate()
	}
	return field.Invalid("kind", "must be one of none, nats, pubsub, jsonl, got %q", o.Kind)
}
