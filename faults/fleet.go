package faults

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// fleetKVOutage: 2 workers in limiter.share.mode members coordinate
// through a NATS server of their own (limiter.share.nats_url), apart from
// the queue's; it is stopped for 10 s mid-drain and started again. The
// workers must keep draining on their own rules below the last fleet rate,
// follow the fleet again when it is back, and lose nothing.
func fleetKVOutage(s *Suite, e *env, rng *rand.Rand) error {
	if err := e.standard(1, validJobs(s.Jobs)); err != nil {
		return err
	}
	ports, err := FreePorts(1)
	if err != nil {
		return err
	}
	coord := &node{cfg: NodeConfig{Name: "coord", Port: ports[0], StoreDir: filepath.Join(e.dir, "nats-coord")}}
	if err := e.startNode(coord); err != nil {
		return err
	}
	coordURL := fmt.Sprintf("nats://127.0.0.1:%d", coord.cfg.Port)
	var ws []*worker
	for _, id := range []string{"w1", "w2"} {
		w, err := e.startFleetWorker(id, fmt.Sprintf("{mode: members, ttl: 3s, nats_url: %q}", coordURL))
		if err != nil {
			return err
		}
		ws = append(ws, w)
	}
	e.start = time.Now()
	at := 0.2 + rng.Float64()*0.3
	if err := e.waitProgress(at, drainTimeout); err != nil {
		return err
	}
	clean := coord.proc.Stop(10 * time.Second)
	e.logf("coordination server stopped at %.0f%% settled (clean exit: %v); down for 10s", at*100, clean)
	time.Sleep(10 * time.Second)
	if err := e.startNode(coord); err != nil {
		return err
	}
	e.logf("coordination server started again")
	e.res.notef("coordination server stopped at %.0f%% settled, for 10s", at*100)
	if err := e.waitDrained(drainTimeout); err != nil {
		return err
	}
	// The drain may end before a worker next reaches the coordination
	// server: the workers keep running until each has logged its return
	// (or a minute passed, which the check below reports).
	for _, w := range ws {
		if err := e.waitLog(w, fleetBack); err != nil {
			e.logf("%v", err)
		}
	}
	if err := e.finishClean(0, "the queue's server was never touched"); err != nil {
		return err
	}
	for _, w := range ws {
		log, err := os.ReadFile(filepath.Join(e.dir, w.id+".log"))
		if err != nil {
			return err
		}
		lost := strings.Contains(string(log), "cluster: fleet state unreachable")
		back := strings.Contains(string(log), fleetBack)
		if !lost || !back {
			e.res.failf("%s: left the fleet during the outage: %v, followed it again after: %v", w.id, lost, back)
		}
	}
	return nil
}

// fleetBack is what a worker logs when it follows the fleet again.
const fleetBack = "cluster: fleet state reachable again"

// startFleetWorker starts a worker in members mode with the
// limiter.share section share (a YAML flow mapping).
func (e *env) startFleetWorker(id, share string) (*worker, error) {
	w := &worker{id: id}
	o := workerOpts{Setup: true, Instances: 1, UnitsPerMinute: paceUnitsPerMinute}
	path, err := e.writeConfig(id, o, 0)
	if err != nil {
		return nil, err
	}
	cfg, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	patched := strings.Replace(string(cfg), "limiter:\n", "limiter:\n  share: "+share+"\n", 1)
	if patched == string(cfg) {
		return nil, fmt.Errorf("faults: %s: no limiter section to add the share to", path)
	}
	if err := os.WriteFile(path, []byte(patched), 0o644); err != nil {
		return nil, err
	}
	w.cfgPath = path
	return w, e.runWorker(w)
}
