package run

import (
	"fmt"
	"math"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/limiter"
)

// Pace is what a person is shown of a limiter's rate, or a fleet's
// (docs/ui.md, "The rates"): the rate it sends at, the rate it measured
// the API to accept and its estimate of what the API accepts, side by
// side, and the burst it can send at once. The rate is a pace, not a
// measure: after a drain it stays where the limiter left it while nothing
// is sent, and the accepted rate says what went through.
type Pace struct {
	Sending  float64 // units per minute: the limiter's rate (limiter.Stats.Rate)
	Accepted float64 // units the API accepted in the last minute; NaN: not measured
	// Estimate is what the limiter's adaptive law estimates the API
	// accepts, units per minute (limiter.Stats.Estimate); NaN or 0 when
	// it has none, and then NoEstimate says why. A fleet's pace says
	// nothing of it.
	Estimate   float64
	NoEstimate NoEstimate
	Burst      float64 // units it would send at once now (limiter.Stats.Burst); NaN for a fleet
}

// NoEstimate says why a limiter has no estimate of what the API accepts;
// "" when it has one, or when nothing is known of it (a fleet, a worker
// that does not report it).
type NoEstimate string

// The reasons for no estimate, as /state and the live page's frames
// spell them.
const (
	EstimateNotYet   NoEstimate = "not_yet"        // the adaptive law has measured nothing yet: no 429 or quota header so far
	EstimateClassic  NoEstimate = "slow_start_off" // the classic rules (limiter.slow_start: false) keep none
	EstimateDisabled NoEstimate = "disabled"       // the limiter only records
)

// Pace reads the pace of the probed worker's limiter.
func (p Probe) Pace() Pace { return limiterPace(p.lim, p.lim.Stats()) }

// limiterPace is the pace of lim, whose snapshot is st. The accepted rate
// is the units of the last minute as they are, not spread over a shorter
// span in the first minute: a drain of a few seconds below the quota would
// read as a rate above it.
func limiterPace(lim *limiter.Limiter, st limiter.Stats) Pace {
	accepted := math.NaN()
	known := lim.AcceptedKnown()
	if known {
		accepted = lim.AcceptedUnits()
	}
	p := Pace{Sending: st.Rate, Accepted: accepted, Estimate: st.Estimate, Burst: st.Burst()}
	switch {
	case st.Disabled:
		p.NoEstimate = EstimateDisabled
	case !lim.Adaptive(): // slow_start is off
		p.NoEstimate = EstimateClassic
	case !(st.Estimate > 0):
		p.NoEstimate = EstimateNotYet
	}
	if p.NoEstimate != "" {
		p.Estimate = math.NaN()
	}
	return p
}

// FleetPace is the pace of the workers ms of one budget, from their
// heartbeats: the sum of their rates and of the units the API accepted
// from each in the minute before its heartbeat (the heartbeats carry no
// estimate). self, when not nil, is this worker's own pace, read now, in
// place of its heartbeat (key selfKey).
func FleetPace(ms []cluster.Member, selfKey string, self *Pace) Pace {
	f := Pace{Estimate: math.NaN(), Burst: math.NaN()} // no estimate shown for a fleet
	for _, m := range ms {
		if self != nil && m.Key == selfKey {
			continue
		}
		f.Sending += m.Rate
		f.Accepted += m.Accepted
	}
	if self != nil {
		f.Sending += self.Sending
		f.Accepted += zeroNaN(self.Accepted)
	}
	return f
}

func zeroNaN(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

// String says the two rates: "sending at 3000 units/min · API accepted
// 2950 units/min (last minute)".
func (p Pace) String() string {
	if math.IsInf(p.Burst, 1) {
		return "limiter disabled: sending without a limit, API accepted: not measured"
	}
	acc := "API accepted: not measured (limiter.slow_start is off)"
	if !math.IsNaN(p.Accepted) {
		acc = "API accepted " + strconv.FormatFloat(p.Accepted, 'f', 0, 64) + " units/min (last minute)"
	}
	return "sending at " + strconv.FormatFloat(p.Sending, 'f', 0, 64) + " units/min · " + acc
}

// EstimateText says the limiter's estimate of what the API accepts:
// "estimate: the API accepts 3000 units/min", or why there is none; ""
// when nothing is known of it (a fleet's pace, a worker that does not
// report it).
func (p Pace) EstimateText() string {
	switch p.NoEstimate {
	case EstimateNotYet:
		return "estimate: none yet (no 429 or quota header so far)"
	case EstimateClassic:
		return "estimate: none (limiter.slow_start is off)"
	case EstimateDisabled:
		return "estimate: none (limiter disabled)"
	}
	if p.Estimate > 0 {
		return "estimate: the API accepts " + strconv.FormatFloat(p.Estimate, 'f', 0, 64) + " units/min"
	}
	return ""
}

// BurstText says the burst in units and in seconds of the current rate:
// "burst available 500 units (= 10.0 s at the current rate)".
func (p Pace) BurstText() string {
	switch {
	case math.IsInf(p.Burst, 1):
		return "no burst limit (limiter disabled)"
	case math.IsNaN(p.Burst):
		return ""
	case p.Sending <= 0:
		return fmt.Sprintf("burst available %.0f units", p.Burst)
	}
	return fmt.Sprintf("burst available %.0f units (= %.1f s at the current rate)", p.Burst, p.Burst/p.Sending*60)
}

// paceCollector exports the pace of a limiter beside its own metrics
// (limiter.Metrics): the accepted rate, absent while it is not measured;
// the limiter's estimate of what the API accepts, absent while it has
// none; and the burst, absent in disabled mode. All are read on each
// scrape. NewPaceCollector builds one; `sluice run` registers it.
type paceCollector struct {
	lim                       *limiter.Limiter
	accepted, estimate, burst *prometheus.Desc
}

// NewPaceCollector returns the collector of
// sluice_limiter_accepted_units_per_minute,
// sluice_limiter_estimate_units_per_minute and sluice_limiter_burst_units
// for lim, registered nowhere.
func NewPaceCollector(lim *limiter.Limiter) prometheus.Collector { return newPaceCollector(lim) }

func newPaceCollector(lim *limiter.Limiter) *paceCollector {
	return &paceCollector{
		lim: lim,
		accepted: prometheus.NewDesc("sluice_limiter_accepted_units_per_minute",
			"Units the API accepted from this instance in the last minute (successes and client errors), beside sluice_limiter_rate_units_per_minute, the rate it sends at; absent while not measured (limiter.slow_start off).", nil, nil),
		estimate: prometheus.NewDesc("sluice_limiter_estimate_units_per_minute",
			"What the limiter's adaptive law estimates the API accepts from this instance, in units per minute (what the API was seen to accept; the rate paces just under it and probes above it); absent while it has none (no 429 or quota header yet, limiter.slow_start off, disabled, or following a fleet).", nil, nil),
		burst: prometheus.NewDesc("sluice_limiter_burst_units",
			"Units the limiter would send at once now: the bucket's level, 0 while paused or while requests wait; absent when the limiter is disabled.", nil, nil),
	}
}

func (c *paceCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.accepted
	ch <- c.estimate
	ch <- c.burst
}

func (c *paceCollector) Collect(ch chan<- prometheus.Metric) {
	p := limiterPace(c.lim, c.lim.Stats())
	if !math.IsNaN(p.Accepted) {
		ch <- prometheus.MustNewConstMetric(c.accepted, prometheus.GaugeValue, p.Accepted)
	}
	if p.Estimate > 0 {
		ch <- prometheus.MustNewConstMetric(c.estimate, prometheus.GaugeValue, p.Estimate)
	}
	if !math.IsInf(p.Burst, 0) && !math.IsNaN(p.Burst) {
		ch <- prometheus.MustNewConstMetric(c.burst, prometheus.GaugeValue, p.Burst)
	}
}
