package cli

import (
	"runtime/debug"
	"strings"
)

// ResolveVersion picks the version to print: the one set at link time;
// else the module version of a `go install module@version` build (or the
// pseudo-version the toolchain derives from the repository); else the VCS
// revision the toolchain stamped (12 characters, "-dirty" for a modified
// tree); else "dev".
func ResolveVersion(linked string, bi *debug.BuildInfo) string {
	if linked != "" && linked != "dev" {
		return linked
	}
	if bi == nil {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	rev = rev[:min(len(rev), 12)]
	if dirty {
		rev += "-dirty"
	}
	return "devel-" + strings.TrimSpace(rev)
}
