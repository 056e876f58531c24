package deploy_test

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"
)

// promtool finds promtool: $PROMTOOL, then PATH, then bin/promtool (where
// `make test` puts it). Under CI, when none is there, it extracts promtool
// from Debian's prometheus package into bin/promtool itself (the same steps
// as the Makefile; nothing is installed and no server starts); elsewhere
// the test skips.
func promtool(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PROMTOOL"); p != "" {
		return p
	}
	if p, err := exec.LookPath("promtool"); err == nil {
		return p
	}
	local, err := filepath.Abs("../bin/promtool")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(local); err == nil {
		return local
	}
	if os.Getenv("CI") == "" {
		t.Skip("promtool not found (make test puts it into bin/promtool)")
	}
	promtoolOnce.Do(func() { promtoolErr = extractPromtool(local) })
	if promtoolErr != nil {
		t.Fatalf("promtool not found, and extracting it from Debian's prometheus package failed: %v", promtoolErr)
	}
	return local
}

var (
	promtoolOnce sync.Once
	promtoolErr  error
)

// extractPromtool downloads Debian's prometheus package (apt-get download,
// after apt-get update if the package lists are missing) and writes its
// usr/bin/promtool to dest.
func extractPromtool(dest string) error {
	dir, err := os.MkdirTemp("", "promtool")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	download := func() error {
		cmd := exec.Command("apt-get", "download", "prometheus")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get download prometheus: %v: %s", err, out)
		}
		return nil
	}
	if download() != nil {
		if out, err := exec.Command("apt-get", "update", "-qq").CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get update: %v: %s", err, out)
		}
		if err := download(); err != nil {
			return err
		}
	}
	debs, _ := filepath.Glob(filepath.Join(dir, "prometheus_*.deb"))
	if len(debs) != 1 {
		return fmt.Errorf("apt-get download left %v", debs)
	}
	cmd := exec.Command("dpkg-deb", "--fsys-tarfile", debs[0])
	tarStream, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer cmd.Wait()
	tr := tar.NewReader(tarStream)
	for {
		h, err := tr.Next()
		if err != nil {
			return fmt.Errorf("usr/bin/promtool not in %s: %v", filepath.Base(debs[0]), err)
		}
		if path.Clean(h.Name) != "usr/bin/promtool" {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
			return err
		}
		tmp := dest + ".tmp"
		f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, tr); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		io.Copy(io.Discard, tarStream)
		return os.Rename(tmp, dest)
	}
}

func runPromtool(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
}

func TestAlertRulesPromtool(t *testing.T) {
	runPromtool(t, "prometheus", "check", "rules", "alerts.yaml")
	runPromtool(t, "prometheus", "test", "rules", "alerts_test.yaml")
}

// TestDashboardPromQL has promtool parse every dashboard query, by writing
// them as recording rules with Grafana's variables filled in.
func TestDashboardPromQL(t *testing.T) {
	tool := promtool(t)
	_, panels := readDashboard(t)
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rs []rule
	for _, p := range panels {
		for _, tg := range p.Targets {
			rs = append(rs, rule{Record: fmt.Sprintf("dashboard:panel_%d:%s", p.ID, strings.ToLower(tg.RefID)), Expr: grafanaVars.Replace(tg.Expr)})
		}
	}
	for _, e := range scaledObjectQueries(t) {
		rs = append(rs, rule{Record: fmt.Sprintf("keda:query_%d", len(rs)), Expr: e})
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].Record < rs[j].Record })
	b, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rs}}})
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "dashboard-rules.yaml")
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "check", "rules", f).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool rejects a dashboard or KEDA query: %v\n%s", err, out)
	}
}
