// Command faults runs sluice's fault-injection scenarios against real
// processes (`sluice run`, `sluice testserver`, NATS servers in their own
// processes) and audits every job against the target's log of accepted job
// ids and the dead-letter records. See docs/reliability.md.
//
//	faults [-sluice bin/sluice] [-scenario NAME[,NAME...]] [-jobs 2000]
//	faults -scenario flood [-flood-jobs 1000000] [-flood-profile DIR]
//	faults natsd -name N -port P -store DIR [-cluster C -cluster-port P -routes URL,...]
//
// It prints one line per scenario,
//
//	kill-worker lost=0 duplicates=12 dead=0 drained_in=31.4
//
// then the scenario's figures and, if it failed, why; and exits 1 if any
// scenario failed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/faults"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "natsd" {
		if err := natsd(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	os.Exit(run(os.Args[1:]))
}

func natsd(args []string) error {
	fs := flag.NewFlagSet("natsd", flag.ContinueOnError)
	var c faults.NodeConfig
	var routes string
	fs.StringVar(&c.Name, "name", "", "server name")
	fs.IntVar(&c.Port, "port", 0, "client port on 127.0.0.1")
	fs.StringVar(&c.StoreDir, "store", "", "JetStream store directory")
	fs.StringVar(&c.Cluster, "cluster", "", "cluster name (none: a single server)")
	fs.IntVar(&c.ClusterPort, "cluster-port", 0, "cluster port on 127.0.0.1")
	fs.StringVar(&routes, "routes", "", "comma-separated routes to the other nodes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if routes != "" {
		c.Routes = strings.Split(routes, ",")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return faults.RunNode(ctx, c)
}

func run(args []string) int {
	fs := flag.NewFlagSet("faults", flag.ContinueOnError)
	sluice := fs.String("sluice", "bin/sluice", "the sluice binary")
	only := fs.String("scenario", "", "scenarios to run, comma-separated (default: all but flood); "+names())
	jobs := fs.Int("jobs", 2000, "jobs per scenario")
	floodJobs := fs.Int("flood-jobs", 1_000_000, "jobs of the flood benchmark")
	floodProfile := fs.String("flood-profile", "", "directory for the flood worker's CPU and allocation profiles (cpu.pprof, allocs.pprof)")
	floodCPU := fs.Int("flood-cpu-seconds", 20, "seconds of the drain the flood's CPU profile covers")
	dir := fs.String("dir", "", "work directory (default: a new temporary directory)")
	keep := fs.Bool("keep", false, "keep the work directory (logs, configs, stores) even when every scenario passes")
	seed := fs.Uint64("seed", uint64(time.Now().UnixNano()), "random seed for the fault points")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "faults: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	selected, err := pick(*only)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	bin, err := filepath.Abs(*sluice)
	if err == nil {
		_, err = os.Stat(bin)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "faults: -sluice: %v (run make build)\n", err)
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 2
	}
	work := *dir
	if work == "" {
		if work, err = os.MkdirTemp("", "sluice-faults-"); err != nil {
			fmt.Fprintln(os.Stderr, "faults:", err)
			return 2
		}
	}
	s := &faults.Suite{Sluice: bin, Self: self, Dir: work, Jobs: *jobs, FloodJobs: *floodJobs, FloodProfile: *floodProfile, FloodCPUSeconds: *floodCPU, Seed: *seed, Out: os.Stdout, Log: os.Stderr}
	fmt.Fprintf(os.Stderr, "faults: seed %d, work directory %s\n", *seed, work)

	failed := 0
	began := time.Now()
	for _, sc := range selected {
		fmt.Fprintf(os.Stderr, "== %s: %s\n", sc.Name, sc.Desc)
		res, err := s.Run(sc)
		if err != nil {
			res.Failures = append(res.Failures, "could not run: "+err.Error())
		}
		fmt.Println(res.Line())
		for _, n := range res.Notes {
			fmt.Printf("    %s\n", n)
		}
		for _, f := range res.Failures {
			fmt.Printf("    FAIL: %s\n", f)
		}
		if !res.Passed() {
			failed++
		}
	}
	fmt.Fprintf(os.Stderr, "faults: %d of %d scenarios passed in %s\n", len(selected)-failed, len(selected), time.Since(began).Round(time.Second))
	if failed > 0 || *keep {
		fmt.Fprintf(os.Stderr, "faults: logs, configs and stores are in %s\n", work)
	} else if *dir == "" {
		os.RemoveAll(work)
	}
	if failed > 0 {
		return 1
	}
	return 0
}

func names() string {
	var n []string
	for _, sc := range faults.Scenarios() {
		n = append(n, sc.Name)
	}
	return strings.Join(append(n, faults.FloodScenario().Name), ", ")
}

func pick(only string) ([]faults.Scenario, error) {
	all := faults.Scenarios()
	if only == "" {
		return all, nil
	}
	byName := map[string]faults.Scenario{}
	for _, sc := range append(all, faults.FloodScenario()) {
		byName[sc.Name] = sc
	}
	var out []faults.Scenario
	for _, name := range strings.Split(only, ",") {
		sc, ok := byName[strings.TrimSpace(name)]
		if !ok {
			return nil, errors.New("faults: -scenario: unknown scenario " + name + " (known: " + names() + ")")
		}
		out = append(out, sc)
	}
	return out, nil
}
