package main

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/limiter"
)

func TestShareConfigErrors(t *testing.T) {
	for _, c := range []struct {
		name, yaml, want string
	}{
		{"mode", "limiter:\n  share:\n    mode: dynamic\n", `config: limiter.share.mode: must be "static", "members" or "leases", got "dynamic" (line 5)`},
		{"instances", "limiter:\n  instances: 3\n  share:\n    mode: members\n", `config: limiter.instances: must be 1 with limiter.share.mode "members" (the count is live), got 3 (line 4)`},
		{"ttl", "limiter:\n  share:\n    mode: leases\n    ttl: 10ms\n", `config: limiter.share.ttl: must be >= 1s, got 10ms (line 6)`},
		{"partitions", "limiter:\n  share:\n    mode: leases\n    partitions: 5000\n", `config: limiter.share.partitions: must be between 1 and 1024, got 5000 (line 6)`},
		{"bucket", "limiter:\n  share:\n    mode: members\n    bucket: a.b\n", `config: limiter.share.bucket: must hold only letters, digits, '-' and '_', got "a.b" (line 6)`},
		{"pubsub", "source:\n  kind: pubsub\n  pubsub:\n    project: p\n    subscription: subs\nlimiter:\n  share:\n    mode: members\n",
			`config: limiter.share.nats_url: required with source.kind "pubsub" (a NATS server to coordinate through) (line 9)`},
		{"url", "limiter:\n  share:\n    mode: members\n    nats_url: '::'\n", `config: limiter.share.nats_url: must be a URL such as nats://127.0.0.1:4222 (line 6)`},
		{"remember", "limiter:\n  share:\n    remember: -1s\n", `config: limiter.share.remember: must be >= 0s, got -1s`},
	} {
		_, err := parseConfig([]byte(minimalConfig+c.yaml), envOf(nil))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v\nwant a line %s", c.name, err, c.want)
		}
	}
	cfg, err := parseConfig([]byte(minimalConfig+"limiter:\n  share:\n    mode: leases\n"), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Limiter.Share.bucket(cfg.Target.BaseURL); !strings.HasPrefix(got, "sluice_") || strings.ContainsAny(got, ".:/") {
		t.Errorf("default bucket %q", got)
	}
	if got := (shareConfig{Bucket: "mine"}).bucket("http://x"); got != "mine" {
		t.Errorf("bucket = %q", got)
	}
	if got := redactURL("nats://u:secretpw@127.0.0.1:4222"); strings.Contains(got, "secretpw") {
		t.Errorf("redactURL = %q", got)
	}
}

func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return math.NaN()
}

func eventuallyTrue(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 30s", what)
		}
		time.Sleep(20 * time.Millisecond) // real server: bounded polling
	}
}

// Two `sluice run` workers on one server, in members and in leases mode:
// each limiter runs at half the budget, `sluice status` lists both, and
// when one stops the other takes the whole budget.
func TestRunShare(t *testing.T) {
	for _, c := range []struct {
		mode    string
		natsURL bool // coordinate through a server of its own, as with Pub/Sub
	}{{shareMembers, false}, {shareLeases, false}, {shareMembers, true}} {
		mode := c.mode
		name := mode
		if c.natsURL {
			name += "_nats_url"
		}
		t.Run(name, func(t *testing.T) {
			natsURL := startNATS(t)
			target := "http://127.0.0.1:1/" // never called: no jobs
			cfg := e2eConfig(t, natsURL, target)
			cfg.Limiter.Enabled = true
			cfg.Limiter.InitialUnitsPerMinute = 1200
			cfg.Limiter.Share = shareConfig{Mode: mode, TTL: limiterDuration(3 * time.Second), Partitions: 16}
			extra := ""
			if c.natsURL {
				cfg.Limiter.Share.NATSURL = startNATS(t)
				extra = "    nats_url: " + cfg.Limiter.Share.NATSURL + "\n"
			}
			mustValid(t, cfg)

			regs := []*prometheus.Registry{prometheus.NewRegistry(), prometheus.NewRegistry()}
			a := startRunReg(t, withID(cfg, "a"), nil, regs[0])
			startRunReg(t, withID(cfg, "b"), nil, regs[1])
			eventuallyTrue(t, "600 units/min on each worker", func() bool {
				for _, reg := range regs {
					if gaugeValue(t, reg, "sluice_cluster_instances") != 2 ||
						math.Abs(gaugeValue(t, reg, "sluice_limiter_rate_units_per_minute")-600) > 1e-6 {
						return false
					}
					if mode == shareLeases && gaugeValue(t, reg, "sluice_cluster_leases") != 8 {
						return false
					}
				}
				return true
			})

			file := filepath.Join(t.TempDir(), "sluice.yaml")
			yaml := "source:\n  jetstream:\n    url: " + natsURL + "\ntarget:\n  base_url: " + target +
				"\nlimiter:\n  share:\n    mode: " + mode + "\n    ttl: 3s\n" + extra
			if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			eventuallyTrue(t, "both members listed at 600/min", func() bool {
				var out bytes.Buffer
				if err := printMembers(t.Context(), file, cfg.Source, &out, nil); err != nil {
					t.Fatal(err)
				}
				s := out.String()
				return strings.HasPrefix(strings.Join(strings.Fields(s), " "), "members ("+mode+") 2 ") &&
					strings.Count(s, "rate     600.0/min") == 2 && strings.Contains(s, "  a ") && strings.Contains(s, "  b ")
			})

			// status --json carries the same members.
			var js bytes.Buffer
			root := newRootCmd()
			root.SetArgs([]string{"status", "-c", file, "--json"})
			root.SetOut(&js)
			root.SetErr(io.Discard)
			if err := root.ExecuteContext(t.Context()); err != nil {
				t.Fatalf("status --json: %v", err)
			}
			var st statusJSON
			if err := json.Unmarshal(js.Bytes(), &st); err != nil {
				t.Fatalf("status --json: %v in %s", err, js.Bytes())
			}
			if st.Share == nil || st.Share.Mode != mode || len(st.Share.Members) != 2 {
				t.Fatalf("status --json: share = %+v, want mode %s with 2 members", st.Share, mode)
			}
			for _, m := range st.Share.Members {
				if math.Abs(m.Rate-600) > 1e-6 {
					t.Errorf("status --json: member %s rate %v, want 600", m.ID, m.Rate)
				}
			}

			a.stop(t)
			eventuallyTrue(t, "the whole budget on b", func() bool {
				return gaugeValue(t, regs[1], "sluice_cluster_instances") == 1 &&
					math.Abs(gaugeValue(t, regs[1], "sluice_limiter_rate_units_per_minute")-1200) < 1e-6
			})
		})
	}
}

func withID(cfg config, id string) config {
	cfg.Worker.ID = id
	return cfg
}

// A worker in members mode starts at the fleet's remembered rate when it
// is younger than limiter.share.remember, and at the initial rate when
// remember is 0s.
func TestRunShareRemembers(t *testing.T) {
	natsURL := startNATS(t)
	cfg := e2eConfig(t, natsURL, "http://127.0.0.1:1/")
	cfg.Limiter.Enabled = true
	cfg.Limiter.InitialUnitsPerMinute = 1200
	cfg.Limiter.Share = shareConfig{Mode: shareMembers, TTL: limiterDuration(3 * time.Second), Remember: limiterDuration(time.Hour)}
	mustValid(t, cfg)
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	kv, err := js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: cluster.FleetBucket(cfg.Limiter.Share.bucket(cfg.Target.BaseURL))})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(limiter.FleetState{Adapt: limiter.Adapt{Rate: 4800, Throttled: true}, Seen: time.Now().Add(-10 * time.Minute)})
	if _, err := kv.Put(t.Context(), "fleet", data); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	a := startRunReg(t, withID(cfg, "a"), nil, reg)
	eventuallyTrue(t, "the remembered 4800 units/min", func() bool {
		return math.Abs(gaugeValue(t, reg, "sluice_limiter_rate_units_per_minute")-4800) < 1e-6 &&
			gaugeValue(t, reg, "sluice_cluster_fleet_rate") == 4800
	})
	a.stop(t)
	cfg.Limiter.Share.Remember = 0
	reg = prometheus.NewRegistry()
	b := startRunReg(t, withID(cfg, "b"), nil, reg)
	eventuallyTrue(t, "the initial 1200 units/min", func() bool {
		return math.Abs(gaugeValue(t, reg, "sluice_limiter_rate_units_per_minute")-1200) < 1e-6
	})
	b.stop(t)
}
