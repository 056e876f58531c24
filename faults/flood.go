package faults

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// floodRSSLimit is the most memory the worker may hold during the flood.
const floodRSSLimit = 200 << 20

// flood enqueues FloodJobs jobs and drains them with one worker, no rate
// limit and the testserver as the target (no proxy), and reports jobs/s
// and the worker's peak RSS. With Suite.FloodProfile it also writes the
// worker's CPU and allocation profiles there.
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

	profile := s.FloodProfile != ""
	w, err := e.startWorker("w1", workerOpts{Setup: true, MaxInFlight: 256, Target: e.targetURL, TargetTimeout: 10 * time.Second, LogLevel: "warn",
		Metrics: profile, Pprof: profile})
	if err != nil {
		return err
	}
	e.start = time.Now()
	cpuDone := make(chan error, 1)
	if profile {
		go func() {
			// Skip the start-up: the profile covers the steady drain.
			time.Sleep(3 * time.Second)
			cpuDone <- fetchProfile(w.metricsPort, fmt.Sprintf("profile?seconds=%d", max(1, s.FloodCPUSeconds)), filepath.Join(s.FloodProfile, "cpu.pprof"))
		}()
	}
	var peak int64
	err = WaitFor(context.Background(), "the flood to drain", 30*time.Minute, time.Second, func() bool {
		peak = max(peak, PeakRSS(w.proc.Pid()))
		n, err := e.remaining()
		return err == nil && n == 0
	})
	e.res.DrainedIn = time.Since(e.start)
	peak = max(peak, PeakRSS(w.proc.Pid()))
	cpu := cpuTime(w.proc.Pid())
	if err != nil {
		e.res.failf("%v", err)
	}
	if profile {
		if err := <-cpuDone; err != nil {
			e.res.failf("cpu profile: %v", err)
		}
		if err := fetchProfile(w.metricsPort, "allocs", filepath.Join(s.FloodProfile, "allocs.pprof")); err != nil {
			e.res.failf("allocs profile: %v", err)
		}
		e.res.notef("profiles in %s (cpu.pprof: %d s of the drain, allocs.pprof)", s.FloodProfile, s.FloodCPUSeconds)
	}
	natsRSS := PeakRSS(e.nodes[0].proc.Pid())
	if err := e.finish(); err != nil {
		return err
	}
	rate := float64(n) / e.res.DrainedIn.Seconds()
	e.res.notef("%d jobs in %.1fs: %.0f jobs/s", n, e.res.DrainedIn.Seconds(), rate)
	if cpu > 0 {
		// CPU time depends less on the machine's other load than jobs/s.
		e.res.notef("worker CPU %.1fs (user+system): %.1f µs per job", cpu.Seconds(), float64(cpu.Microseconds())/float64(n))
	}
	e.res.notef("worker peak RSS (VmHWM) %.1f MB; nats-server peak RSS %.1f MB", float64(peak)/(1<<20), float64(natsRSS)/(1<<20))
	if peak == 0 {
		e.res.failf("could not read the worker's RSS from /proc")
	} else if peak >= floodRSSLimit {
		e.res.failf("worker peak RSS %.1f MB, want < %d MB", float64(peak)/(1<<20), floodRSSLimit>>20)
	}
	e.wantNoDead()
	return nil
}

// fetchProfile saves the worker's /debug/pprof/<what> to path.
func fetchProfile(metricsPort int, what, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	c := http.Client{Timeout: 5 * time.Minute}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/%s", metricsPort, what))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /debug/pprof/%s: %s", what, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// cpuTime is the user and system CPU time a process has used so far, 0 if
// /proc cannot tell.
func cpuTime(pid int) time.Duration {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces or parentheses: state is the first, utime the 12th,
	// stime the 13th.
	i := strings.LastIndexByte(string(data), ')')
	f := strings.Fields(string(data[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticks
}
