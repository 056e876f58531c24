package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluicehq/sluice/cluster"
)

// poisonedBucket is the coordination bucket of the poisoned-fleet
// workers; their fleet state is in cluster.FleetBucket of it.
const poisonedBucket = "poisoned"

// poisonedFleet: 3 workers in limiter.share.mode members drain the queue
// twice, each drain timed from the publication of its jobs: once clean,
// then while the fleet state is overwritten 2 s apart with a pause a day
// ahead, a rate of 1e308 and a literal null, after which the fleet bucket
// is deleted. Every job must reach the target, none be lost, no worker
// exit, and the poisoned drain take at most 1.5 times the clean one.
func poisonedFleet(s *Suite, e *env, rng *rand.Rand) error {
	if err := e.startNATS(1); err != nil {
		return err
	}
	if err := e.setupQueue(1); err != nil {
		return err
	}
	if err := e.startTarget(); err != nil {
		return err
	}
	var ws []*worker
	for _, id := range []string{"w1", "w2", "w3"} {
		w, err := e.startFleetWorker(id, "{mode: members, ttl: 3s, bucket: "+poisonedBucket+"}")
		if err != nil {
			return err
		}
		ws = append(ws, w)
	}
	for _, w := range ws {
		if err := e.waitLog(w, `"msg":"sluice running"`); err != nil {
			return err
		}
	}

	// The clean drain.
	if err := e.drainBatch(validJobs(s.Jobs)); err != nil {
		return err
	}
	clean := e.res.DrainedIn
	e.logf("clean drain of %d jobs: %.1fs", s.Jobs, clean.Seconds())

	// The poisoned drain: the same workers, as many new jobs.
	jobs := make([]job, s.Jobs)
	for i := range jobs {
		jobs[i] = validJob(jobID(s.Jobs + i))
	}
	e.start = time.Now()
	if err := e.publishMore(jobs); err != nil {
		return err
	}
	type poisoned struct {
		deleted time.Time
		err     error
	}
	done := make(chan poisoned, 1)
	go func() {
		at, err := e.poisonFleet(0.1 + rng.Float64()*0.2)
		done <- poisoned{at, err}
	}()
	if err := e.waitDrained(drainTimeout); err != nil {
		return err
	}
	p := <-done
	if p.err != nil {
		return p.err
	}
	took := e.res.DrainedIn
	// The client ends a watch of a deleted bucket 20 s after the delete:
	// the workers must outlive that too.
	time.Sleep(time.Until(p.deleted.Add(watchEnd)))
	e.res.notef("clean drain %.1fs, poisoned drain %.1fs: %.2f times", clean.Seconds(), took.Seconds(), took.Seconds()/clean.Seconds())
	if took > clean*3/2 {
		e.res.failf("the poisoned drain took %.1fs, more than 1.5 times the clean drain's %.1fs", took.Seconds(), clean.Seconds())
	}
	for _, w := range ws {
		if w.proc.Exited() {
			e.res.failf("%s exited: %v", w.id, w.proc.Err())
		}
	}
	if _, err := e.js.KeyValue(context.Background(), cluster.FleetBucket(poisonedBucket)); err != nil {
		e.res.failf("the fleet bucket %s is not there %v after its delete: %v", cluster.FleetBucket(poisonedBucket), watchEnd, err)
	}
	invalid, created := 0, 0
	for _, w := range ws {
		log, err := os.ReadFile(filepath.Join(e.dir, w.id+".log"))
		if err != nil {
			return err
		}
		invalid += strings.Count(string(log), "cluster: invalid shared state ignored")
		created += strings.Count(string(log), "cluster: fleet bucket created again")
	}
	e.res.notef("invalid fleet state logged %d times, the bucket created again %d times", invalid, created)
	if invalid == 0 {
		e.res.failf("no worker logged the invalid fleet state: the poison missed the drain")
	}
	return e.finishClean(0, "nothing was killed: the fleet state is not the queue")
}

// drainBatch publishes jobs and waits until the queue has drained them,
// timing the drain from the publication (e.res.DrainedIn).
func (e *env) drainBatch(jobs []job) error {
	e.start = time.Now()
	if err := e.publishMore(jobs); err != nil {
		return err
	}
	e.logf("%d jobs published", len(jobs))
	return e.waitDrained(drainTimeout)
}

// waitLog waits until w's log holds s.
func (e *env) waitLog(w *worker, s string) error {
	path := filepath.Join(e.dir, w.id+".log")
	return WaitFor(context.Background(), w.id+" logging "+s, 60*time.Second, 100*time.Millisecond, func() bool {
		log, err := os.ReadFile(path)
		return w.proc.Exited() || err == nil && strings.Contains(string(log), s)
	})
}

// watchEnd is how long after the delete of a bucket the workers must
// still run: the client ends its watches of the bucket 20 s after.
const watchEnd = 25 * time.Second

// poisonFleet waits until frac of the second half of the jobs published
// are settled, then overwrites the fleet state with a pause a day ahead, a
// rate of 1e308 and a literal null, 2 s apart, and deletes the fleet
// bucket. It returns when it deleted the bucket.
func (e *env) poisonFleet(frac float64) (time.Time, error) {
	if err := e.waitProgress((1+frac)/2, drainTimeout); err != nil {
		return time.Time{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := cluster.FleetBucket(poisonedBucket)
	kv, err := e.js.KeyValue(ctx, name)
	if err != nil {
		return time.Time{}, fmt.Errorf("faults: the fleet bucket: %w", err)
	}
	entry, err := kv.Get(ctx, "fleet")
	if err != nil {
		return time.Time{}, fmt.Errorf("faults: the fleet state: %w", err)
	}
	var state map[string]any
	if err := json.Unmarshal(entry.Value(), &state); err != nil {
		return time.Time{}, fmt.Errorf("faults: the fleet state %q: %w", entry.Value(), err)
	}
	put := func(what string, edit func()) error {
		data := []byte("null")
		if edit != nil {
			state["seen"] = time.Now().Format(time.RFC3339Nano)
			edit()
			data, _ = json.Marshal(state)
		}
		if _, err := kv.Put(ctx, "fleet", data); err != nil {
			return fmt.Errorf("faults: write %s: %w", what, err)
		}
		e.logf("fleet state overwritten: %s", what)
		time.Sleep(2 * time.Second)
		return nil
	}
	if err := put("a pause a day ahead", func() { state["paused_until"] = time.Now().Add(24 * time.Hour).Format(time.RFC3339Nano) }); err != nil {
		return time.Time{}, err
	}
	if err := put("a rate of 1e308", func() { delete(state, "paused_until"); state["rate"] = 1e308 }); err != nil {
		return time.Time{}, err
	}
	if err := put("null", nil); err != nil {
		return time.Time{}, err
	}
	if err := e.js.DeleteKeyValue(ctx, name); err != nil {
		return time.Time{}, fmt.Errorf("faults: delete the fleet bucket: %w", err)
	}
	deleted := time.Now()
	e.logf("fleet bucket %s deleted", name)
	e.res.notef("the fleet state poisoned at %.0f%% of the second drain (pause +24h, rate 1e308, null, 2s apart), then its bucket deleted", frac*100)
	return deleted, nil
}
