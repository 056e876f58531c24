package cluster

import (
	"log/slog"
	"time"
)

// Option configures a Membership or Leases.
type Option func(*settings)

type settings struct {
	log     *slog.Logger
	metrics *Metrics
	onCount func(int)
	onShare func(float64)
	limiter Limiter         // WithLimiter
	onHeld  func([]int)     // tests: the partitions held, after every change
	onWrite func(time.Time) // tests: each heartbeat written, at its time
}

func newSettings(opts []Option) settings {
	var s settings
	for _, o := range opts {
		o(&s)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

// WithLogger sets the logger for joins, leaves, count and lease changes
// and coordination errors. The default discards.
func WithLogger(log *slog.Logger) Option { return func(s *settings) { s.log = log } }

// WithMetrics makes a Membership record the instance count, and Leases the
// leases held, in m.
func WithMetrics(m *Metrics) Option { return func(s *settings) { s.metrics = m } }

// WithInstanceCount makes a Membership call fn with the live count N when
// it joins and whenever N changes, for an observer (the limiter itself is
// fed by Membership.Drive). It is called from one goroutine at a time.
func WithInstanceCount(fn func(n int)) Option { return func(s *settings) { s.onCount = fn } }

// WithShare makes Leases call fn with this worker's fraction of the budget
// (leases held / partitions, or IdleShare when it holds none) whenever it
// changes, for an observer (the limiter itself is fed by WithLimiter). It
// is called from one goroutine at a time, after the limiter's share is
// set: before a lease is given up and after one is acquired, so the
// limiter never runs on a partition it does not hold.
func WithShare(fn func(share float64)) Option { return func(s *settings) { s.onShare = fn } }
