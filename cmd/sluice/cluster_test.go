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
	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/internal/app/queue"
	"github.com/sluicehq/sluice/internal/app/run"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testkit/backends"
	"github.com/sluicehq/sluice/limiter/control"
	"github.com/sluicehq/sluice/limiter/fleet"
)

// gaugeValue returns reg's gauge name, NaN when there is none.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	if v, ok := backends.Gauge(t, reg, name); ok {
		return v
	}
	return math.NaN()
}

// Two `sluice run` workers on one server, in members and in leases mode:
// each limiter runs at half the budget, `sluice status` lists both, and
// when one stops the other takes the whole budget.
func TestRunShare(t *testing.T) {
	for _, c := range []struct {
		mode    string
		natsURL bool // coordinate through a server of its own, as with Pub/Sub
	}{{config.ShareMembers, false}, {config.ShareLeases, false}, {config.ShareMembers, true}} {
		mode := c.mode
		name := mode
		if c.natsURL {
			name += "_nats_url"
		}
		t.Run(name, func(t *testing.T) {
			natsURL := backends.StartNATS(t)
			target := "http://127.0.0.1:1/" // never called: no jobs
			cfg := e2eConfig(t, natsURL, target)
			cfg.Limiter.Disabled = false
			cfg.Limiter.InitialUnitsPerMinute = 1200
			cfg.Limiter.Share = config.Share{Mode: mode, TTL: 3 * time.Second, Partitions: 16}
			extra := ""
			if c.natsURL {
				cfg.Limiter.Share.NATSURL = backends.StartNATS(t)
				extra = "    nats_url: " + cfg.Limiter.Share.NATSURL + "\n"
			}
			mustValid(t, cfg)

			regs := []*prometheus.Registry{prometheus.NewRegistry(), prometheus.NewRegistry()}
			a := startRunReg(t, withID(cfg, "a"), nil, regs[0])
			startRunReg(t, withID(cfg, "b"), nil, regs[1])
			testkit.Eventually(t, "600 units/min on each worker", func() bool {
				for _, reg := range regs {
					if gaugeValue(t, reg, "sluice_cluster_instances") != 2 ||
						math.Abs(gaugeValue(t, reg, "sluice_limiter_rate_units_per_minute")-600) > 1e-6 {
						return false
					}
					if mode == config.ShareLeases && gaugeValue(t, reg, "sluice_cluster_leases") != 8 {
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
			testkit.Eventually(t, "both members listed at 600/min", func() bool {
				fileCfg, err := commandConfig(file)
				if err != nil {
					t.Fatal(err)
				}
				ml, err := run.ListMembers(t.Context(), fileCfg, nil)
				if err != nil {
					t.Fatal(err)
				}
				var out bytes.Buffer
				if err := ml.Print(&out); err != nil {
					t.Fatal(err)
				}
				s := out.String()
				return strings.HasPrefix(strings.Join(strings.Fields(s), " "), "members ("+mode+") 2 ") &&
					strings.Count(s, "sending     600.0/min  accepted ") == 2 && strings.Contains(s, "  a ") && strings.Contains(s, "  b ") &&
					strings.Contains(s, "\n  fleet sending at 1200 units/min · API accepted ") &&
					strings.Count(s, "  clock +0.")+strings.Count(s, "  clock -0.") == 2 // one machine: one clock
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
			var st queue.StatusReport
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
				if m.Skew <= -time.Second || m.Skew >= time.Second {
					t.Errorf("status --json: member %s clock_skew %v on the server's machine, want under a second", m.ID, m.Skew)
				}
			}

			a.stop(t)
			testkit.Eventually(t, "the whole budget on b", func() bool {
				return gaugeValue(t, regs[1], "sluice_cluster_instances") == 1 &&
					math.Abs(gaugeValue(t, regs[1], "sluice_limiter_rate_units_per_minute")-1200) < 1e-6
			})
		})
	}
}

func withID(cfg config.Config, id string) config.Config {
	cfg.Worker.ID = id
	return cfg
}

// A worker in members mode starts at the fleet's remembered rate when it
// is younger than limiter.share.remember, and at the initial rate when
// remember is 0s.
func TestRunShareRemembers(t *testing.T) {
	natsURL := backends.StartNATS(t)
	cfg := e2eConfig(t, natsURL, "http://127.0.0.1:1/")
	cfg.Limiter.Disabled = false
	cfg.Limiter.InitialUnitsPerMinute = 1200
	cfg.Limiter.Share = config.Share{Mode: config.ShareMembers, TTL: 3 * time.Second, Remember: time.Hour}
	mustValid(t, cfg)
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	kv, err := js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: cluster.FleetBucket(cfg.Limiter.Share.BucketName(cfg.Target.BaseURL))})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(fleet.State{Adapt: control.Adapt{Rate: 4800, Throttled: true}, Seen: time.Now().Add(-10 * time.Minute)})
	if _, err := kv.Put(t.Context(), "fleet", data); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	a := startRunReg(t, withID(cfg, "a"), nil, reg)
	testkit.Eventually(t, "the remembered 4800 units/min", func() bool {
		return math.Abs(gaugeValue(t, reg, "sluice_limiter_rate_units_per_minute")-4800) < 1e-6 &&
			gaugeValue(t, reg, "sluice_cluster_fleet_rate") == 4800
	})
	a.stop(t)
	cfg.Limiter.Share.Remember = 0
	reg = prometheus.NewRegistry()
	b := startRunReg(t, withID(cfg, "b"), nil, reg)
	testkit.Eventually(t, "the initial 1200 units/min", func() bool {
		return math.Abs(gaugeValue(t, reg, "sluice_limiter_rate_units_per_minute")-1200) < 1e-6
	})
	b.stop(t)
}
