package deploy_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/worker"
)

// readUnit reads a systemd unit file into section → key → values (a key may
// repeat). Continuation lines are not used in sluice.service, so they are an
// error here.
func readUnit(t *testing.T, path string) map[string]map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	unit := map[string]map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			unit[section] = map[string][]string{}
		case section == "":
			t.Fatalf("%s:%d: a setting outside any section", path, n)
		case strings.HasSuffix(line, `\`):
			t.Fatalf("%s:%d: unexpected continuation line", path, n)
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s:%d: not key=value: %q", path, n, line)
			}
			unit[section][k] = append(unit[section][k], v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return unit
}

func TestSystemdUnit(t *testing.T) {
	const path = "systemd/sluice.service"
	unit := readUnit(t, path)
	svc := unit["Service"]
	one := func(k string) string {
		if len(svc[k]) != 1 {
			t.Errorf("[Service] %s set %d times, want once", k, len(svc[k]))
			return ""
		}
		return svc[k][0]
	}

	argv := strings.Fields(one("ExecStart"))
	if len(argv) < 2 || argv[0] != "/usr/local/bin/sluice" {
		t.Fatalf("ExecStart %v: want /usr/local/bin/sluice …", argv)
	}
	commandHelp(t, argv[1:], "run")

	// Not root: a dynamic user, or a named one that is not root.
	if one("DynamicUser") != "yes" {
		if u := svc["User"]; len(u) == 0 || u[0] == "root" || u[0] == "0" {
			t.Error("the service runs as root")
		}
	}
	if wd, sd := one("WorkingDirectory"), one("StateDirectory"); wd != "/var/lib/"+sd {
		t.Errorf("WorkingDirectory %s is not the StateDirectory /var/lib/%s (the embedded queue's store lives there)", wd, sd)
	}
	if one("KillSignal") != "SIGTERM" {
		t.Error("KillSignal must be SIGTERM: sluice shuts down cleanly on it")
	}
	stop, err := time.ParseDuration(one("TimeoutStopSec"))
	if err != nil || stop <= worker.DefaultShutdownTimeout {
		t.Errorf("TimeoutStopSec %v (%v): want more than the shutdown timeout %v", stop, err, worker.DefaultShutdownTimeout)
	}
	if one("Restart") == "" || one("NoNewPrivileges") != "yes" {
		t.Error("want Restart and NoNewPrivileges=yes")
	}
	if ef := one("EnvironmentFile"); !strings.HasPrefix(ef, "-/etc/sluice/") {
		t.Errorf("EnvironmentFile %q: want an optional file under /etc/sluice", ef)
	}
	if len(unit["Install"]["WantedBy"]) == 0 {
		t.Error("[Install] has no WantedBy")
	}
	for _, k := range []string{"Description", "After", "Wants"} {
		if len(unit["Unit"][k]) == 0 {
			t.Errorf("[Unit] has no %s", k)
		}
	}

	// systemd itself checks every directive, where it is installed. Its
	// ExecStart must exist, so the copy runs this test binary instead.
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze not installed; directives not verified")
		return
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(t.TempDir(), "sluice.service")
	text := strings.Replace(string(src), "ExecStart=/usr/local/bin/sluice", "ExecStart="+self, 1)
	if err := os.WriteFile(copyPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", copyPath).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
