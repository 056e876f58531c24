package config

import (
	"errors"
	"net/url"
	"time"

	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/field"
	"github.com/sluicehq/sluice/limiter/fleet"
)

// Share modes accepted in limiter.share.mode.
const (
	ShareStatic  = "static"  // limiter.instances, fixed
	ShareMembers = "members" // N = live heartbeats in the bucket
	ShareLeases  = "leases"  // capacity partitions leased in the bucket
)

// Share is the `limiter.share:` section: how the workers sharing one budget
// find their share of it. See docs/scaling.md.
type Share struct {
	Mode       string        `yaml:"mode" enum:"static,members,leases" doc:"static: limiter.instances, fixed. members: N is the number of workers with a live heartbeat in a NATS KV bucket, and each takes 1/N. leases: the budget is split into partitions, and a worker's share is the partitions it leases."`
	Bucket     string        `yaml:"bucket" doc:"The KV bucket of the workers sharing this budget. Empty: sluice_ followed by the target's host (sluice_api_example_com)."`
	TTL        time.Duration `yaml:"ttl" doc:"A heartbeat or lease not refreshed for this long is gone (each is refreshed every ttl/3)."`
	Partitions int           `yaml:"partitions" doc:"leases: the partitions of the budget, each worth budget/partitions."`
	// NATSURL is the coordination server; default: the JetStream source's
	// own connection. Required with source.kind pubsub.
	NATSURL string `yaml:"nats_url" doc:"The NATS server to coordinate through. Empty: the jetstream source's own. Required with source.kind pubsub."`
	// Remember is how long the fleet's rate is remembered in the bucket
	// after the last worker ran on it; default 1h.
	Remember time.Duration `yaml:"remember" doc:"The fleet's rate stays in the KV bucket named after bucket with _fleet appended: a worker that starts within this time of the last one begins at that rate times its share, not at initial_units_per_minute (alone on the embedded server, at that rate). 0s forgets at once."`
}

func defaultShare() Share {
	return Share{Mode: ShareStatic, TTL: cluster.DefaultTTL, Partitions: cluster.DefaultPartitions, Remember: fleet.DefaultRemember}
}

// check checks the section against the rest of the config; paths are the
// file's, from the root.
func (s Share) check(c *Config) error {
	var errs []error
	if s.Remember < 0 {
		errs = append(errs, field.Invalid("limiter.share.remember", "must be >= 0s, got %v", s.Remember))
	}
	switch s.Mode {
	case ShareStatic:
		return errors.Join(errs...)
	case ShareMembers, ShareLeases:
	default:
		return errors.Join(append(errs, field.Invalid("limiter.share.mode", "must be %q, %q or %q, got %q", ShareStatic, ShareMembers, ShareLeases, s.Mode))...)
	}
	if c.Limiter.Instances != 1 {
		errs = append(errs, field.Invalid("limiter.instances", "must be 1 with limiter.share.mode %q (the count is live), got %d", s.Mode, c.Limiter.Instances))
	}
	if s.NATSURL == "" && c.Source.Kind != SourceJetStream {
		errs = append(errs, field.Invalid("limiter.share.nats_url", "required with source.kind %q (a NATS server to coordinate through)", c.Source.Kind))
	}
	if s.NATSURL != "" {
		if u, err := url.Parse(s.NATSURL); err != nil || u.Host == "" {
			errs = append(errs, field.Invalid("limiter.share.nats_url", "must be a URL such as nats://127.0.0.1:4222"))
		}
	}
	errs = append(errs, field.Under("limiter.share", s.Lib(c.Target.BaseURL, c.Worker.ID).Validate()))
	return errors.Join(errs...)
}

// BucketName is the bucket: as configured, or named after the budget, the
// target's host ("sluice_api_example_com").
func (s Share) BucketName(target string) string {
	if s.Bucket != "" {
		return s.Bucket
	}
	host := "share"
	if u, err := url.Parse(target); err == nil && u.Host != "" {
		host = u.Host
	}
	return "sluice_" + cluster.BucketName(host)
}

// Lib is the cluster library's Config for a worker of this budget.
func (s Share) Lib(target, id string) cluster.Config {
	return cluster.Config{Bucket: s.BucketName(target), ID: id, TTL: s.TTL, Partitions: s.Partitions}
}
