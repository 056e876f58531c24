package deploy_test

import (
	"debug/elf"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/app/config"
)

// The Dockerfile is checked without a container engine: a small parser reads
// it the way Docker does (comments, line continuations, exec-form JSON), and
// the test follows the binary from the build stage to the ENTRYPOINT.

type dockerInstr struct {
	line int    // first line of the instruction
	cmd  string // instruction keyword, upper case
	args string // the rest, continuation lines joined
}

type dockerStage struct {
	name, image string
	instrs      []dockerInstr
}

var dockerKeywords = map[string]bool{
	"FROM": true, "RUN": true, "CMD": true, "LABEL": true, "MAINTAINER": true, "EXPOSE": true,
	"ENV": true, "ADD": true, "COPY": true, "ENTRYPOINT": true, "VOLUME": true, "USER": true,
	"WORKDIR": true, "ARG": true, "ONBUILD": true, "STOPSIGNAL": true, "HEALTHCHECK": true, "SHELL": true,
}

// parseDockerfile splits a Dockerfile into instructions. It returns the
// parser directives (leading "# key=value" lines) separately.
func parseDockerfile(src string) (directives map[string]string, instrs []dockerInstr, err error) {
	directives = map[string]string{}
	inDirectives := true
	var cur *dockerInstr
	var buf strings.Builder
	for i, raw := range strings.Split(src, "\n") {
		n := i + 1
		line := strings.TrimRight(raw, " \t\r")
		trimmed := strings.TrimSpace(line)
		if inDirectives {
			if m := regexp.MustCompile(`^#\s*([a-z]+)\s*=\s*(\S+)$`).FindStringSubmatch(trimmed); m != nil {
				directives[m[1]] = m[2]
				continue
			}
			inDirectives = false
		}
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && cur == nil) {
			continue // comments, also inside a continuation; blank lines between instructions
		}
		if cur == nil {
			kw, rest, _ := strings.Cut(trimmed, " ")
			kw = strings.ToUpper(kw)
			if !dockerKeywords[kw] {
				return nil, nil, fmt.Errorf("line %d: unknown instruction %q", n, kw)
			}
			cur = &dockerInstr{line: n, cmd: kw}
			buf.Reset()
			line = rest
		}
		if strings.HasSuffix(line, `\`) {
			buf.WriteString(strings.TrimSuffix(line, `\`))
			buf.WriteByte(' ')
			continue
		}
		buf.WriteString(line)
		cur.args = strings.Join(strings.Fields(buf.String()), " ")
		if cur.args == "" {
			return nil, nil, fmt.Errorf("line %d: %s has no arguments", cur.line, cur.cmd)
		}
		instrs = append(instrs, *cur)
		cur = nil
	}
	if cur != nil {
		return nil, nil, fmt.Errorf("line %d: %s continues past the end of the file", cur.line, cur.cmd)
	}
	return directives, instrs, nil
}

// dockerStages groups instructions by FROM; global ARGs come first.
func dockerStages(instrs []dockerInstr) (globalArgs map[string]string, stages []dockerStage, err error) {
	globalArgs = map[string]string{}
	for _, in := range instrs {
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			st := dockerStage{image: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.name = f[2]
			} else if len(f) != 1 {
				return nil, nil, fmt.Errorf("line %d: FROM %s: want IMAGE [AS NAME]", in.line, in.args)
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			if in.cmd != "ARG" {
				return nil, nil, fmt.Errorf("line %d: %s before the first FROM", in.line, in.cmd)
			}
			k, v, _ := strings.Cut(in.args, "=")
			globalArgs[k] = v
			continue
		}
		stages[len(stages)-1].instrs = append(stages[len(stages)-1].instrs, in)
	}
	return globalArgs, stages, nil
}

// flagsAndRest splits leading --name=value flags off an instruction.
func flagsAndRest(args string) (map[string]string, string) {
	flags := map[string]string{}
	for strings.HasPrefix(args, "--") {
		tok, rest, _ := strings.Cut(args, " ")
		k, v, _ := strings.Cut(strings.TrimPrefix(tok, "--"), "=")
		flags[k] = v
		args = strings.TrimSpace(rest)
	}
	return flags, args
}

// execForm decodes the JSON array form of CMD, ENTRYPOINT and HEALTHCHECK CMD.
func execForm(t *testing.T, in dockerInstr, s string) []string {
	t.Helper()
	var argv []string
	if err := json.Unmarshal([]byte(s), &argv); err != nil || len(argv) == 0 {
		t.Fatalf("line %d: %s must use the exec (JSON array) form, got %s", in.line, in.cmd, s)
	}
	return argv
}

func find(st dockerStage, cmd string) []dockerInstr {
	var out []dockerInstr
	for _, in := range st.instrs {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

func goModVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("go.mod: no go directive")
	}
	return string(m[1])
}

func TestDockerfile(t *testing.T) {
	src, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	directives, instrs, err := parseDockerfile(string(src))
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	if !strings.HasPrefix(directives["syntax"], "docker/dockerfile:") {
		t.Errorf("want a `# syntax=docker/dockerfile:…` directive, got %q", directives["syntax"])
	}
	global, stages, err := dockerStages(instrs)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	if len(stages) < 2 {
		t.Fatalf("%d stages, want a multi-stage build", len(stages))
	}
	build, final := stages[0], stages[len(stages)-1]
	built := checkBuildStage(t, build, global, string(src))
	bin := checkRuntimeStage(t, final, build.name, built)
	checkHealthcheck(t, final, bin)

	// The default command runs sluice with a config file.
	if cmds := find(final, "CMD"); len(cmds) == 1 {
		argv := execForm(t, cmds[0], cmds[0].args)
		help := commandHelp(t, argv, "run")
		if c := flagValue(argv, help, "config", "c"); help != "" && !strings.HasPrefix(c, "/etc/sluice/") {
			t.Errorf("CMD %v: config %q, want a file under /etc/sluice", argv, c)
		}
	} else {
		t.Errorf("final stage has %d CMDs, want 1", len(cmds))
	}

	ignore, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".git", "sluice-data"} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(want) + `$`).Match(ignore) {
			t.Errorf(".dockerignore does not exclude %s", want)
		}
	}
}

// checkBuildStage: the Go toolchain of go.mod, a static build of
// ./cmd/sluice with its version; it returns the path it builds.
func checkBuildStage(t *testing.T, build dockerStage, global map[string]string, src string) string {
	t.Helper()
	if build.name == "" {
		t.Fatal("the first stage has no name to copy from")
	}
	image := strings.ReplaceAll(build.image, "${GO_VERSION}", global["GO_VERSION"])
	if want := "golang:" + goModVersion(t); !strings.HasPrefix(image, want) {
		t.Errorf("build stage FROM %s (%s), want %s… to match go.mod", build.image, image, want)
	}
	var built string
	for _, in := range find(build, "RUN") {
		if !strings.Contains(in.args, "go build") {
			continue
		}
		for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-X main.version=${VERSION}", "./cmd/sluice"} {
			if !strings.Contains(in.args, want) {
				t.Errorf("line %d: go build lacks %q", in.line, want)
			}
		}
		if m := regexp.MustCompile(`-o (\S+)`).FindStringSubmatch(in.args); m != nil {
			built = m[1]
		}
	}
	if built == "" {
		t.Fatal("no `go build -o PATH` in the build stage")
	}
	if len(find(build, "ARG")) == 0 || !strings.Contains(src, "ARG VERSION") {
		t.Error("the build stage takes no VERSION argument")
	}
	return built
}

// checkRuntimeStage: the built binary is what runs, as a non-root user;
// it returns the binary's path in the image.
func checkRuntimeStage(t *testing.T, final dockerStage, from, built string) string {
	t.Helper()
	var bin string
	for _, in := range find(final, "COPY") {
		flags, rest := flagsAndRest(in.args)
		f := strings.Fields(rest)
		if flags["from"] == from && len(f) == 2 && f[0] == built {
			bin = f[1]
		}
	}
	if bin == "" {
		t.Fatalf("the final stage does not COPY --from=%s %s", from, built)
	}
	entry := find(final, "ENTRYPOINT")
	if len(entry) != 1 {
		t.Fatalf("final stage has %d ENTRYPOINTs, want 1", len(entry))
	}
	if argv := execForm(t, entry[0], entry[0].args); argv[0] != bin {
		t.Errorf("ENTRYPOINT runs %s, want the copied binary %s", argv[0], bin)
	}
	users := find(final, "USER")
	if len(users) == 0 {
		t.Fatal("the final stage sets no USER: it would run as root")
	}
	user := strings.Fields(users[len(users)-1].args)[0]
	if name, _, _ := strings.Cut(user, ":"); name == "root" || name == "0" || name == "" {
		t.Errorf("USER %s is root", user)
	}
	return bin
}

// checkHealthcheck: the HEALTHCHECK runs `sluice healthcheck` with valid
// flags against the default metrics port, which is exposed.
func checkHealthcheck(t *testing.T, final dockerStage, bin string) {
	t.Helper()
	hc := find(final, "HEALTHCHECK")
	if len(hc) != 1 {
		t.Fatalf("final stage has %d HEALTHCHECKs, want 1", len(hc))
	}
	flags, rest := flagsAndRest(hc[0].args)
	for _, f := range []string{"interval", "timeout", "retries"} {
		if flags[f] == "" {
			t.Errorf("HEALTHCHECK has no --%s", f)
		}
	}
	hcCmd, ok := strings.CutPrefix(rest, "CMD ")
	if !ok {
		t.Fatalf("HEALTHCHECK %s: want CMD", rest)
	}
	argv := execForm(t, hc[0], hcCmd)
	if argv[0] != bin {
		t.Errorf("HEALTHCHECK runs %s, want %s", argv[0], bin)
	}
	help := commandHelp(t, argv[1:], "healthcheck")
	_, port, _ := net.SplitHostPort(config.DefaultOpsListen)
	if u := flagValue(argv[1:], help, "url", ""); !strings.Contains(u, ":"+port+"/") {
		t.Errorf("HEALTHCHECK probes %q, not the default metrics port %s", u, port)
	}
	if expose := find(final, "EXPOSE"); len(expose) != 1 || expose[0].args != port {
		t.Errorf("EXPOSE %v, want %s", expose, port)
	}
}

func TestParseDockerfile(t *testing.T) {
	src := "# syntax=docker/dockerfile:1\n# escape=\\\n\n# a comment\nfrom alpine AS a\nRUN echo one \\\n  # a comment inside\n  two\n\ncmd [\"x\"]\n"
	dir, instrs, err := parseDockerfile(src)
	if err != nil {
		t.Fatal(err)
	}
	if dir["syntax"] != "docker/dockerfile:1" || dir["escape"] != `\` {
		t.Errorf("directives %v", dir)
	}
	want := []dockerInstr{{5, "FROM", "alpine AS a"}, {6, "RUN", "echo one two"}, {10, "CMD", `["x"]`}}
	if fmt.Sprint(instrs) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", instrs, want)
	}
	for _, bad := range []string{"FORM alpine\n", "FROM alpine\nRUN a \\", "FROM alpine\nRUN\n", "RUN x\nFROM alpine\n"} {
		_, instrs, err := parseDockerfile(bad)
		if err == nil {
			_, _, err = dockerStages(instrs)
		}
		if err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestStaticBuild builds sluice the way the Dockerfile does and checks that
// the result needs no dynamic loader or shared library, so it runs on a
// distroless/static base.
func TestStaticBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	out := sluiceBinary(t)
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary asks for a dynamic loader (PT_INTERP)")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v", libs)
	}
	b, err := exec.Command(out, "version").Output()
	if err != nil || !strings.HasPrefix(string(b), "sluice v9.9.9-test ") {
		t.Errorf("sluice version: %q, %v", b, err)
	}
}
