package cluster

import (
	"errors"
	"os"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/field"
)

// Defaults of Config.
const (
	DefaultTTL        = 15 * time.Second
	DefaultPartitions = 16
	// MinTTL is the shortest TTL Validate accepts.
	MinTTL = time.Second
	// MaxPartitions is the most partitions Validate accepts.
	MaxPartitions = 1024
)

// Config configures a Membership and its Leases. The zero value of every
// field but Bucket means its default.
type Config struct {
	// Bucket is the NATS KV bucket that all workers sharing one budget use
	// (letters, digits, '-' and '_'). Required.
	Bucket string
	// ID names this worker in the bucket and in `sluice status`; default
	// hostname-pid. A random suffix makes its key unique, so two workers
	// given the same ID still count twice.
	ID string
	// TTL is the bucket's max age: a heartbeat or a lease not refreshed for
	// TTL is gone. Default 15s, at least 1s.
	TTL time.Duration
	// Refresh is how often the heartbeat and the leases are written;
	// default TTL/3, which is also the most.
	Refresh time.Duration
	// Partitions is the number of capacity partitions of the budget, each
	// worth 1/Partitions of it (leases only). Default 16.
	Partitions int
}

// Validate reports every field that breaks its rule, each as a
// *field.Error naming it as in the config file's limiter.share section.
func (c Config) Validate() error {
	var errs []error
	if c.Bucket == "" {
		errs = append(errs, field.Invalid("bucket", "required"))
	} else if !validBucket(c.Bucket) {
		errs = append(errs, field.Invalid("bucket", "must hold only letters, digits, '-' and '_', got %q", c.Bucket))
	}
	if c.TTL != 0 && c.TTL < MinTTL {
		errs = append(errs, field.Invalid("ttl", "must be >= %v, got %v", MinTTL, c.TTL))
	}
	ttl := c.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}
	if c.Refresh < 0 || c.Refresh > ttl/3 {
		errs = append(errs, field.Invalid("refresh", "must be in (0, ttl/3 = %v], got %v", ttl/3, c.Refresh))
	}
	if c.Partitions < 0 || c.Partitions > MaxPartitions {
		errs = append(errs, field.Invalid("partitions", "must be between 1 and %d, got %d", MaxPartitions, c.Partitions))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.Refresh == 0 {
		c.Refresh = c.TTL / 3
	}
	if c.Partitions == 0 {
		c.Partitions = DefaultPartitions
	}
	if c.ID == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "sluice"
		}
		c.ID = host + "-" + strconv.Itoa(os.Getpid())
	}
	return c
}

// BucketName turns any name (a target's host, say) into a valid bucket
// name: every character that is not a letter, digit, '-' or '_' becomes
// '_'.
func BucketName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !bucketChar(c) {
			b[i] = '_'
		}
	}
	return string(b)
}

func validBucket(s string) bool {
	for i := 0; i < len(s); i++ {
		if !bucketChar(s[i]) {
			return false
		}
	}
	return s != ""
}

func bucketChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// keyPart turns an ID into a valid part of a KV key.
func keyPart(id string) string {
	b := []byte(id)
	for i, c := range b {
		if !bucketChar(c) && c != '=' {
			b[i] = '_'
		}
	}
	return string(b)
}
