package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// The deployment files run sluice command lines (the Dockerfile's
// HEALTHCHECK and CMD, the Kubernetes container args, the systemd
// ExecStart). The tests check each against the real binary, built once
// the way the Dockerfile builds it.

var (
	buildOnce sync.Once
	built     string // the binary's path
	buildErr  error
	buildDir  string
)

// TestMain removes the binary after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// sluiceBinary builds ./cmd/sluice statically, with version v9.9.9-test,
// once for the package's tests.
func sluiceBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			buildErr = err
			return
		}
		if buildDir, err = os.MkdirTemp("", "sluice-deploy-test-"); err != nil {
			buildErr = err
			return
		}
		built = filepath.Join(buildDir, "sluice")
		cmd := exec.Command(goBin, "build", "-trimpath", "-ldflags", "-s -w -X main.version=v9.9.9-test", "-o", built, "../cmd/sluice")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{err: err, out: string(out)}
		}
	})
	if buildErr != nil {
		t.Fatalf("go build ./cmd/sluice: %v", buildErr)
	}
	return built
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// commandHelp checks that args (without the program name) is a command
// line sluice accepts, a known command with valid flags, for the command
// want ("run", "healthcheck"), and returns that command's help.
func commandHelp(t *testing.T, args []string, want string) string {
	t.Helper()
	out, err := exec.Command(sluiceBinary(t), append(args, "--help")...).CombinedOutput()
	if err != nil {
		t.Errorf("sluice %s: %v\n%s", strings.Join(args, " "), err, out)
		return ""
	}
	if !regexp.MustCompile(`(?m)^  sluice ` + regexp.QuoteMeta(want) + `\b`).Match(out) {
		t.Errorf("sluice %s: not `sluice %s`:\n%s", strings.Join(args, " "), want, out)
	}
	return string(out)
}

// flagValue is the value of --name (or -short, when not "") in args, or
// its default as the help prints it.
func flagValue(args []string, help, name, short string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
		if (a == "--"+name || short != "" && a == "-"+short) && i+1 < len(args) {
			return args[i+1]
		}
	}
	m := regexp.MustCompile(`--` + regexp.QuoteMeta(name) + ` \S+ .*\(default "([^"]*)"\)`).FindStringSubmatch(help)
	if m == nil {
		return ""
	}
	return m[1]
}
