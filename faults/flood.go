package faults

import (
	"context"
	"math/rand/v2"
	"time"
)

// floodRSSLimit is the most memory the worker may hold during the flood.
const floodRSSLimit = 200 << 20

// flood enqueues FloodJobs jobs and drains them with one worker, no rate
// limit and the testserver as the target (no proxy), and reports jobs/s
// and the worker's peak RSS.
func flood(s *Suite, e *env, _ *rand.Rand) error {
	n := s.FloodJobs
	if err := e.startNATS(1); err != nil {
		return err
	}
	if err := e.setupQueue(1); err != nil {
		return err
	}
	if err := e.startTarget(); err != nil {
		return err
	}
	began := time.Now()
	const chunk = 100_000
	for lo := 0; lo < n; lo += chunk {
		jobs := make([]job, 0, chunk)
		for i := lo; i < min(lo+chunk, n); i++ {
			jobs = append(jobs, validJob(jobID(i)))
		}
		if err := e.publishMore(jobs); err != nil {
			return err
		}
	}
	if err := e.checkStored(); err != nil {
		return err
	}
	e.logf("%d jobs published in %.1fs", n, time.Since(began).Seconds())

	w, err := e.startWorker("w1", workerOpts{Setup: true, MaxInFlight: 256, Target: e.targetURL, TargetTimeout: 10 * time.Second, LogLevel: "warn"})
	if err != nil {
		return err
	}
	e.start = time.Now()
	var peak int64
	err = WaitFor(context.Background(), "the flood to drain", 30*time.Minute, time.Second, func() bool {
		peak = max(peak, PeakRSS(w.proc.Pid()))
		n, err := e.remaining()
		return err == nil && n == 0
	})
	e.res.DrainedIn = time.Since(e.start)
	peak = max(peak, PeakRSS(w.proc.Pid()))
	if err != nil {
		e.res.failf("%v", err)
	}
	natsRSS := PeakRSS(e.nodes[0].proc.Pid())
	if err := e.finish(); err != nil {
		return err
	}
	rate := float64(n) / e.res.DrainedIn.Seconds()
	e.res.notef("%d jobs in %.1fs: %.0f jobs/s", n, e.res.DrainedIn.Seconds(), rate)
	e.res.notef("worker peak RSS (VmHWM) %.1f MB; nats-server peak RSS %.1f MB", float64(peak)/(1<<20), float64(natsRSS)/(1<<20))
	if peak == 0 {
		e.res.failf("could not read the worker's RSS from /proc")
	} else if peak >= floodRSSLimit {
		e.res.failf("worker peak RSS %.1f MB, want < %d MB", float64(peak)/(1<<20), floodRSSLimit>>20)
	}
	e.wantNoDead()
	return nil
}
