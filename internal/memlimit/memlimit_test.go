package memlimit

import (
	"math"
	"runtime/debug"
	"testing"
	"testing/fstest"
)

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

func TestCgroupLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fs    fstest.MapFS
		want  int64
		isErr bool
	}{
		{"v2 container (own namespace)", fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("536870912\n"),
		}, 536870912, false},
		{"v2 systemd unit on the host", fstest.MapFS{
			"proc/self/cgroup": file("0::/system.slice/sluice.service\n"),
			"sys/fs/cgroup/system.slice/sluice.service/memory.max": file("268435456\n"),
			"sys/fs/cgroup/memory.max":                             file("max\n"),
		}, 268435456, false},
		{"v2 no limit", fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("max\n"),
		}, 0, false},
		{"v1", fstest.MapFS{
			"proc/self/cgroup":                           file("12:cpu,cpuacct:/kubepods/pod1\n4:memory:/kubepods/pod1/c1\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes": file("1073741824\n"),
		}, 1073741824, false},
		{"v1 no limit (page-rounded max int64)", fstest.MapFS{
			"proc/self/cgroup":                           file("4:memory:/\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes": file("9223372036854771712\n"),
		}, 0, false},
		{"no cgroup file", fstest.MapFS{}, 0, false},
		{"no limit file", fstest.MapFS{"proc/self/cgroup": file("0::/\n")}, 0, false},
		{"garbage", fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("lots\n"),
		}, 0, true},
		{"path escaping the mount stays under it", fstest.MapFS{
			"proc/self/cgroup":         file("0::/../../etc\n"),
			"sys/fs/cgroup/memory.max": file("1000000\n"),
		}, 1000000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CgroupLimit(tc.fs)
			if (err != nil) != tc.isErr {
				t.Fatalf("error %v, want error: %v", err, tc.isErr)
			}
			if got != tc.want {
				t.Errorf("limit %d, want %d", got, tc.want)
			}
		})
	}
}

func TestApply(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	debug.SetMemoryLimit(math.MaxInt64)

	cg := fstest.MapFS{
		"proc/self/cgroup":         file("0::/\n"),
		"sys/fs/cgroup/memory.max": file("1000000000\n"),
	}
	noEnv := func(string) string { return "" }

	got, src, err := Apply(noEnv, cg)
	if err != nil || src != FromCgroup || got != 900000000 {
		t.Fatalf("Apply = %d, %s, %v; want 900000000 from the cgroup", got, src, err)
	}
	if cur := debug.SetMemoryLimit(-1); cur != 900000000 {
		t.Errorf("runtime limit %d, want 900000000", cur)
	}

	// GOMEMLIMIT set by the user wins: the runtime's limit is left alone.
	debug.SetMemoryLimit(123 << 20)
	got, src, _ = Apply(func(k string) string {
		if k == "GOMEMLIMIT" {
			return "123MiB"
		}
		return ""
	}, cg)
	if src != FromEnv || got != 123<<20 || debug.SetMemoryLimit(-1) != 123<<20 {
		t.Errorf("with GOMEMLIMIT: %d from %s, want the runtime's 123MiB untouched", got, src)
	}

	// No cgroup limit: nothing changes.
	debug.SetMemoryLimit(math.MaxInt64)
	if _, src, _ := Apply(noEnv, fstest.MapFS{}); src != None || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("without a cgroup limit: source %s, runtime limit %d", src, debug.SetMemoryLimit(-1))
	}
}
