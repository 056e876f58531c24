package faults

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Proc is a child process whose output goes to a log file. It is stopped
// by its own pid only.
type Proc struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
	started time.Time
	exited  time.Time
}

// Start starts name's command with its stdout and stderr appended to
// logPath.
func Start(name, logPath string, args ...string) (*Proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("faults: %s: %w", name, err)
	}
	fmt.Fprintf(f, "--- %s: %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(args, " "))
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = childEnv()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("faults: start %s: %w", name, err)
	}
	p := &Proc{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{}), started: time.Now()}
	go func() {
		p.err = cmd.Wait()
		p.exited = time.Now()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is the exit error once Done is closed.
func (p *Proc) Err() error { return p.err }

// ExitedAt is when the process exited (zero before).
func (p *Proc) ExitedAt() time.Time { return p.exited }

// Signal sends sig to the process, if it still runs.
func (p *Proc) Signal(sig syscall.Signal) error {
	if p.Exited() {
		return nil
	}
	return p.cmd.Process.Signal(sig)
}

// Kill sends SIGKILL and waits for the exit.
func (p *Proc) Kill() {
	_ = p.Signal(syscall.SIGKILL)
	<-p.done
}

// Stop sends SIGTERM and waits up to grace for the exit, then kills the
// process. It reports whether the process exited on SIGTERM.
func (p *Proc) Stop(grace time.Duration) bool {
	if p.Exited() {
		return true
	}
	_ = p.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		p.Kill()
		return false
	}
}

// ExitedCleanly reports whether the process exited with status 0.
func (p *Proc) ExitedCleanly() bool { return p.Exited() && p.err == nil }

// StoppedCleanlyBy reports whether the process exited on its own after
// sig with sluice's status for it, 128 + the signal's number (143 for
// SIGTERM), rather than being killed or failing.
func (p *Proc) StoppedCleanlyBy(sig syscall.Signal) bool {
	if !p.Exited() {
		return false
	}
	var ee *exec.ExitError
	return errors.As(p.err, &ee) && ee.Exited() && ee.ExitCode() == 128+int(sig)
}

// PeakRSS reads the process's peak resident set size (VmHWM) in bytes
// from /proc; 0 when it cannot be read.
func PeakRSS(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(v)
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				if err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("faults: free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// FreePorts returns n distinct free ports.
func FreePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	out := make([]int, n)
	for i := range out {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("faults: free port: %w", err)
		}
		lns = append(lns, ln)
		out[i] = ln.Addr().(*net.TCPAddr).Port
	}
	return out, nil
}

// WaitFor polls cond every interval until it holds, ctx ends or timeout
// passes.
func WaitFor(ctx context.Context, what string, timeout, interval time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("faults: %s: not within %s", what, timeout)
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("faults: %s", what), ctx.Err())
		case <-time.After(interval):
		}
	}
}

// Listening reports whether something accepts TCP connections on
// 127.0.0.1:port.
func Listening(port int) bool {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// overrideVars are the variables sluice reads as overrides of its config
// file (docs/configuration.md). The scenarios configure every process by
// its file, so a value in the environment of the suite (NATS_URL names the
// machine's server in CI) must not reach them.
var overrideVars = []string{"NATS_URL", "GOOGLE_CLOUD_PROJECT", "SLUICE_CONFIG",
	"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"}

// childEnv is this process's environment without overrideVars.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(overrideVars, name) {
			env = append(env, kv)
		}
	}
	return env
}
