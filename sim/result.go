package sim

import (
	"math"
	"slices"
	"time"
)

// Summary holds a run's figures; it is the JSON of `sluice simulate --json`.
type Summary struct {
	// Utilization is the units accepted ÷ the quota capacity of the run (the
	// quota left to the simulated clients, integrated over time from the
	// end of Config.Idle).
	Utilization float64 `json:"utilization"`
	// UtilizationSteady is the same from Config.SteadyFrom after the idle
	// time (minute 2 of the demand) on.
	UtilizationSteady float64 `json:"utilization_steady"`
	Throttled         int     `json:"throttled"`      // 429 responses
	Requests          int     `json:"requests"`       // calls that reached the API
	UnitsAccepted     float64 `json:"units_accepted"` // units the API accepted
	// P95WaitS is the 95th percentile of the time an attempt waited for its
	// units in the limiter, granted attempts only (0 in mode none).
	P95WaitS float64 `json:"p95_wait_s"`
	Rejected int     `json:"rejected"` // attempts the limiter turned away (queue full, max_wait)
	GaveUp   int     `json:"gave_up"`  // jobs dropped after their last retry was throttled
	// RecoverySeconds is the time from the return of the quota (the end of
	// the last quota drop) to the first whole second at which the units
	// used in the trailing minute reach 90% of the quota per minute. Nil when the run
	// has no quota drop that ends before its end, or when it never
	// recovers.
	RecoverySeconds *float64 `json:"recovery_s"`
	// TimeTo90Seconds is the first whole second from the start of the
	// demand (the end of Config.Idle) at which the units used in the
	// trailing minute reach 90% of the quota per minute, whatever the
	// API's window. Nil when they never do.
	TimeTo90Seconds *float64 `json:"time_to_90_s"`
}

// Result is what Run measured.
type Result struct {
	Config  Config
	Summary Summary

	MaxQueue  int     // most requests waiting in all limiters at a sample
	MeanQueue float64 // mean of the samples

	Series Series
}

// Series holds one sample per whole second of virtual time, from 0 to the
// end of the run. Rates are in units per minute.
type Series struct {
	Instances int         // the most instances that took part at once, and the length of the longest Rates row
	T         []float64   // seconds from the start
	Rates     [][]float64 // each instance's rate; NaN where the instance has no limiter or has not joined or has left
	SumRate   []float64   // the sum of the instances' rates; NaN in mode none
	Quota     []float64   // the quota left to the simulated clients, per minute
	Used      []float64   // units accepted in the trailing minute (the quota meter)
	Sent      []float64   // units of the calls that reached the API in the trailing window, per minute
	Queue     []int       // requests waiting in all limiters
	Throttles []int       // 429s in the second before the sample
}

func (r *runner) result() *Result {
	res := &Result{Config: r.cfg, Series: r.series}
	s := &res.Summary
	s.Throttled = r.throttled
	s.Requests = r.requests
	s.UnitsAccepted = r.unitsAccepted
	s.Rejected = r.rejected
	s.GaveUp = r.gaveUp
	idle := r.cfg.Idle
	s.Utilization = round(r.unitsAccepted/r.capacity(idle, r.cfg.Duration), 4)
	s.UtilizationSteady = round(r.unitsSteady/r.capacity(idle+r.cfg.SteadyFrom, r.cfg.Duration), 4)
	if len(r.waits) > 0 {
		slices.Sort(r.waits)
		i := int(math.Ceil(0.95*float64(len(r.waits)))) - 1
		s.P95WaitS = round(r.waits[max(i, 0)].Seconds(), 3)
	}
	if t, ok := r.series.first90(idle.Seconds()); ok {
		t = round(t-idle.Seconds(), 3)
		s.TimeTo90Seconds = &t
	}
	var back time.Duration = -1
	for _, e := range r.cfg.Events {
		if e.Kind == QuotaDrop {
			back = max(back, e.At+e.For)
		}
	}
	if back >= 0 && back < r.cfg.Duration {
		if t, ok := r.series.first90(back.Seconds()); ok {
			v := round(t-back.Seconds(), 3)
			s.RecoverySeconds = &v
		}
	}
	for _, q := range r.series.Queue {
		res.MaxQueue = max(res.MaxQueue, q)
		res.MeanQueue += float64(q)
	}
	if n := len(r.series.Queue); n > 0 {
		res.MeanQueue = round(res.MeanQueue/float64(n), 2)
	}
	return res
}

// first90 returns the first sample time at or after from at which the
// units used in the trailing minute reach 90% of the quota then: the
// quota meter of the reference simulator entering its 90–100% band.
func (s *Series) first90(from float64) (float64, bool) {
	for i, t := range s.T {
		if t >= from && s.Used[i] >= 0.9*s.Quota[i]-windowEps {
			return t, true
		}
	}
	return 0, false
}

// capacity returns the units the quota left to the simulated clients
// allows over [a, b): the quota per window, integrated over time.
func (r *runner) capacity(a, b time.Duration) float64 {
	var units float64
	for i, st := range r.quotaLog {
		end := time.Duration(math.MaxInt64)
		if i+1 < len(r.quotaLog) {
			end = r.quotaLog[i+1].at
		}
		lo, hi := max(a, st.at), min(b, end)
		if hi > lo {
			units += st.quota * float64(hi-lo) / float64(r.cfg.Window)
		}
	}
	return units
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// sample records the state at a whole second.
func (r *runner) sample() {
	s := &r.series
	s.T = append(s.T, r.now.Seconds())
	rates := make([]float64, len(r.inst))
	sum, queue := 0.0, 0
	for i, in := range r.inst {
		if !in.active || in.core == nil {
			rates[i] = math.NaN()
			continue
		}
		rates[i] = in.core.Rate()
		sum += rates[i]
		queue += in.core.QueueLen()
	}
	if r.cfg.Mode == ModeNone {
		sum = math.NaN()
	}
	s.Rates = append(s.Rates, rates)
	s.SumRate = append(s.SumRate, sum)
	s.Quota = append(s.Quota, r.quota*float64(time.Minute)/float64(r.cfg.Window))
	perMin := float64(time.Minute) / float64(r.cfg.Window)
	s.Used = append(s.Used, r.minute.Used(r.vt(r.now)))
	s.Sent = append(s.Sent, r.sent.Used(r.vt(r.now))*perMin)
	s.Queue = append(s.Queue, queue)
	k := int(r.now / time.Second)
	thr := 0
	if k > 0 && k-1 < len(r.thrSec) {
		thr = r.thrSec[k-1]
	}
	s.Throttles = append(s.Throttles, thr)
}
