// Package memlimit sets the Go runtime's soft memory limit from the memory
// limit of the cgroup the process runs in (a container's limits.memory, a
// systemd unit's MemoryMax), so that the garbage collector works harder
// before the kernel's OOM killer would end the process.
//
// The limit is set to Fraction of the cgroup's limit: the rest is headroom
// for memory the Go runtime does not account for (the binary's mapped text,
// kernel buffers). A GOMEMLIMIT in the environment always wins; without a
// cgroup limit (no cgroup, "max", or a limit too large to be real) nothing
// is changed.
package memlimit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
)

// Fraction of the cgroup limit that becomes the runtime's soft limit.
const Fraction = 0.9

// unlimited is a limit at or above which a cgroup counts as unlimited
// (cgroup v1 reports "no limit" as a page-rounded maximum int64).
const unlimited = 1 << 62

// Source says where the runtime's memory limit came from.
type Source string

const (
	FromEnv    Source = "GOMEMLIMIT"
	FromCgroup Source = "cgroup"
	None       Source = "none"
)

// Apply sets the runtime's soft memory limit to Fraction of the cgroup
// limit read from fsys (the root file system: "proc/self/cgroup" and
// "sys/fs/cgroup/..."), unless getenv("GOMEMLIMIT") is set. It returns the
// limit in effect and where it came from.
func Apply(getenv func(string) string, fsys fs.FS) (int64, Source, error) {
	if getenv("GOMEMLIMIT") != "" {
		return debug.SetMemoryLimit(-1), FromEnv, nil
	}
	limit, err := CgroupLimit(fsys)
	if err != nil || limit == 0 {
		return 0, None, err
	}
	soft := int64(float64(limit) * Fraction)
	debug.SetMemoryLimit(soft)
	return soft, FromCgroup, nil
}

// CgroupLimit returns the memory limit in bytes of the process's cgroup
// (v2 memory.max, or v1 memory.limit_in_bytes), 0 when there is none.
func CgroupLimit(fsys fs.FS) (int64, error) {
	self, err := fs.ReadFile(fsys, "proc/self/cgroup")
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	} else if err != nil {
		return 0, fmt.Errorf("memlimit: %w", err)
	}
	for _, f := range candidates(self) {
		b, err := fs.ReadFile(fsys, f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return 0, fmt.Errorf("memlimit: %w", err)
		}
		return parseLimit(f, b)
	}
	return 0, nil
}

// candidates lists the limit files to try, most specific first: the
// process's own cgroup (a systemd unit on the host), then the root of the
// mount (a container with its own cgroup namespace, where /proc/self/cgroup
// says "/").
func candidates(self []byte) []string {
	var v2, v1 string
	sc := bufio.NewScanner(bytes.NewReader(self))
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2 = parts[2]
		case hasController(parts[1], "memory"):
			v1 = parts[2]
		}
	}
	var out []string
	if v1 != "" {
		out = append(out,
			clean("sys/fs/cgroup/memory", v1, "memory.limit_in_bytes"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes")
	}
	if v2 != "" {
		out = append(out, clean("sys/fs/cgroup", v2, "memory.max"), "sys/fs/cgroup/memory.max")
	}
	return out
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// clean joins a cgroup path under a mount point; fs.FS paths have no
// leading slash and no "..".
func clean(mount, cgroup, file string) string {
	return path.Join(mount, path.Clean("/" + cgroup)[1:], file)
}

func parseLimit(file string, b []byte) (int64, error) {
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("memlimit: %s: not a byte count: %q", file, s)
	}
	if n >= unlimited || n > math.MaxInt64 {
		return 0, nil
	}
	return int64(n), nil
}
