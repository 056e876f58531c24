package cluster

import (
	"log/slog"
	"time"
)

// Option configures a Membership or Leases.
type Option func(*settings)

type settings struct {
	log      *slog.Logger
	metrics  *Metrics
	rate     func() float64
	lastWait func() time.Time
	onCount  func(int)
	onShare  func(float64)
	onHeld   func([]int) // tests: the partitions held, after every change
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

// WithRate gives the member's current rate (units per minute), which each
// heartbeat carries for `sluice status`.
func WithRate(rate func() float64) Option { return func(s *settings) { s.rate = rate } }

// WithInstanceCount makes a Membership call fn with the live count N when
// it joins and whenever N changes (members mode: fn is the limiter's
// SetInstanceCount). It is called from one goroutine at a time.
func WithInstanceCount(fn func(n int)) Option { return func(s *settings) { s.onCount = fn } }

// WithShare makes Leases call fn with this worker's fraction of the budget
// (leases held / partitions, or IdleShare when it holds none) whenever it
// changes (leases mode: fn is the limiter's SetShare). It is called from
// one goroutine at a time, before a lease is given up and after one is
// acquired, so the limiter never runs on a partition it does not hold.
func WithShare(fn func(share float64)) Option { return func(s *settings) { s.onShare = fn } }

// WithLastWait gives when the member's requests last had to wait in its
// limiter (limiter.Limiter.LastWait), which each heartbeat carries for the
// fleet's raise rule.
func WithLastWait(fn func() time.Time) Option { return func(s *settings) { s.lastWait = fn } }
