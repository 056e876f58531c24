// Package deploy_test checks the shipped deployment examples as files: no
// Go code lives in deploy/.
package deploy_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// An example that an autoscaler (a KEDA ScaledObject, a
// HorizontalPodAutoscaler) scales must not divide the budget by a fixed
// limiter.instances: the replica count changes, so each replica's share has
// to follow the live count (limiter.share.mode members or leases,
// docs/scaling.md). A fixed count over-runs the budget when more replicas
// run and leaves it unused when fewer do.

// autoscalerKinds are the objects that change a workload's replica count.
var autoscalerKinds = map[string]bool{"ScaledObject": true, "HorizontalPodAutoscaler": true}

// liveModes are the limiter.share modes whose share follows the replicas.
var liveModes = map[string]bool{"members": true, "leases": true}

// limiterShare is the part of a sluice config this check reads.
type limiterShare struct {
	Limiter struct {
		Instances *int `yaml:"instances"`
		Share     struct {
			Mode string `yaml:"mode"`
		} `yaml:"share"`
	} `yaml:"limiter"`
}

// fixedShare says why a sluice config divides the budget by a fixed count,
// or "" when its share follows the live replica count.
func fixedShare(config string) (string, error) {
	var c limiterShare
	if err := yaml.Unmarshal([]byte(config), &c); err != nil {
		return "", err
	}
	mode := c.Limiter.Share.Mode
	switch {
	case c.Limiter.Instances != nil:
		return fmt.Sprintf("a fixed limiter.instances: %d", *c.Limiter.Instances), nil
	case mode == "":
		return "no limiter.share.mode (static by default: each replica takes the whole budget)", nil
	case !liveModes[mode]:
		return fmt.Sprintf("limiter.share.mode %q", mode), nil
	}
	return "", nil
}

// object is one decoded manifest.
type object struct {
	file string
	m    map[string]any
}

func (o object) kind() string { s, _ := o.m["kind"].(string); return s }

func (o object) name() string {
	md, _ := o.m["metadata"].(map[string]any)
	s, _ := md["name"].(string)
	return s
}

// sluiceConfigs returns the config files a ConfigMap carries (data keys
// ending in .yaml or .yml that hold a sluice config).
func (o object) sluiceConfigs() map[string]string {
	out := map[string]string{}
	data, _ := o.m["data"].(map[string]any)
	for k, v := range data {
		s, ok := v.(string)
		if ok && (strings.HasSuffix(k, ".yaml") || strings.HasSuffix(k, ".yml")) && strings.Contains(s, "limiter:") {
			out[k] = s
		}
	}
	return out
}

func decodeFile(path string) ([]object, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var objs []object
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if m != nil {
			objs = append(objs, object{file: path, m: m})
		}
	}
}

// exampleObjects returns what one example directory applies: every
// manifest in it (a kustomization's commented-out resources are applied by
// hand, so they count too), the objects of the kustomize bases it names,
// and its patches, which replace the base's object of the same kind and
// name.
func exampleObjects(dir string) ([]object, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var own, patches []object
	var bases []string
	for _, f := range files {
		objs, err := decodeFile(f)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if o.kind() == "Kustomization" {
				k, err := kustomization(dir, o)
				if err != nil {
					return nil, err
				}
				bases = append(bases, k.bases...)
				for _, p := range k.patches {
					ps, err := decodeFile(p)
					if err != nil {
						return nil, err
					}
					patches = append(patches, ps...)
				}
				continue
			}
			own = append(own, o)
		}
	}
	isPatch := map[string]bool{}
	for _, p := range patches {
		isPatch[p.file] = true
	}
	var out []object
	for _, o := range own {
		if !isPatch[o.file] {
			out = append(out, o)
		}
	}
	for _, b := range bases {
		objs, err := exampleObjects(b)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return applyPatches(out, patches), nil
}

type kust struct {
	bases   []string // directories among the resources
	patches []string // patch files
}

func kustomization(dir string, o object) (kust, error) {
	var k kust
	res, _ := o.m["resources"].([]any)
	for _, r := range res {
		p := filepath.Join(dir, fmt.Sprint(r))
		if st, err := os.Stat(p); err != nil {
			return k, fmt.Errorf("%s: resource %v: %w", o.file, r, err)
		} else if st.IsDir() {
			k.bases = append(k.bases, p)
		}
	}
	ps, _ := o.m["patches"].([]any)
	for _, p := range ps {
		pm, _ := p.(map[string]any)
		if path, ok := pm["path"].(string); ok {
			k.patches = append(k.patches, filepath.Join(dir, path))
		}
	}
	return k, nil
}

// applyPatches replaces a ConfigMap's data by a patch's: the one field of a
// ConfigMap patch this check reads. Other patches leave the objects alone.
func applyPatches(objs, patches []object) []object {
	for _, p := range patches {
		if p.kind() != "ConfigMap" {
			continue
		}
		for i, o := range objs {
			if o.kind() == "ConfigMap" && o.name() == p.name() {
				m := map[string]any{}
				for k, v := range o.m {
					m[k] = v
				}
				m["data"] = p.m["data"]
				objs[i] = object{file: p.file, m: m}
			}
		}
	}
	return objs
}

// checkExample lists the configs of an autoscaled example whose share is
// fixed.
func checkExample(objs []object) []string {
	var scaler string
	for _, o := range objs {
		if autoscalerKinds[o.kind()] {
			scaler = o.kind() + " " + o.name() + " (" + filepath.Base(o.file) + ")"
		}
	}
	if scaler == "" {
		return nil
	}
	var problems []string
	for _, o := range objs {
		for key, cfg := range o.sluiceConfigs() {
			why, err := fixedShare(cfg)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: ConfigMap %s, %s: %v", o.file, o.name(), key, err))
			} else if why != "" {
				problems = append(problems, fmt.Sprintf("%s: ConfigMap %s, %s: %s, but %s changes the replica count; use limiter.share.mode members or leases", o.file, o.name(), key, why, scaler))
			}
		}
	}
	return problems
}

// exampleDirs lists the directories under deploy/ that hold manifests.
func exampleDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if m, _ := filepath.Glob(filepath.Join(p, "*.yaml")); len(m) > 0 {
			dirs = append(dirs, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

func TestAutoscaledExamplesShareByLiveCount(t *testing.T) {
	scaled := 0
	for _, dir := range exampleDirs(t) {
		objs, err := exampleObjects(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if autoscalerKinds[o.kind()] {
				scaled++
				break
			}
		}
		for _, p := range checkExample(objs) {
			t.Error(p)
		}
	}
	// deploy/kubernetes (JetStream) and deploy/kubernetes-pubsub are both
	// scaled by KEDA: a walk that found neither checked nothing.
	if scaled < 2 {
		t.Errorf("found %d autoscaled examples under deploy/, want at least 2", scaled)
	}
}

// The docs' sluice configs in a section about autoscaling follow the same
// rule.
func TestAutoscaledDocSnippetsShareByLiveCount(t *testing.T) {
	checked := 0
	for _, doc := range []string{"../docs/deployment.md", "../docs/scaling.md", "../docs/operations.md", "../README.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range autoscaledSnippets(string(b)) {
			checked++
			if why, err := fixedShare(s.code); err != nil {
				t.Errorf("%s, section %q: %v", doc, s.section, err)
			} else if why != "" {
				t.Errorf("%s, section %q: a sluice config with %s where replicas are autoscaled", doc, s.section, why)
			}
		}
	}
	if checked == 0 {
		t.Error("no sluice config found in an autoscaling section of the docs")
	}
}

type snippet struct{ section, code string }

var (
	fenceRE    = regexp.MustCompile("(?s)```ya?ml\n(.*?)```")
	autoscaled = regexp.MustCompile(`(?i)\b(keda|autoscal\w*|kubernetes|scaledobject)\b`)
)

// autoscaledSnippets returns the YAML blocks holding a limiter: config in
// the sections (## headings) that are about Kubernetes or autoscaling.
func autoscaledSnippets(md string) []snippet {
	var out []snippet
	for _, sec := range strings.Split("\n"+md, "\n## ")[1:] {
		title, _, _ := strings.Cut(sec, "\n")
		if !autoscaled.MatchString(title) {
			continue
		}
		for _, m := range fenceRE.FindAllStringSubmatch(sec, -1) {
			if strings.Contains(m[1], "limiter:") {
				out = append(out, snippet{title, m[1]})
			}
		}
	}
	return out
}

// The rule itself, on examples made up for it.
func TestCheckExample(t *testing.T) {
	cm := func(limiter string) object {
		return object{file: "cm.yaml", m: map[string]any{
			"kind": "ConfigMap", "metadata": map[string]any{"name": "sluice-config"},
			"data": map[string]any{"sluice.yaml": "source: {kind: jetstream}\nlimiter:\n" + limiter},
		}}
	}
	so := object{file: "so.yaml", m: map[string]any{"kind": "ScaledObject", "metadata": map[string]any{"name": "sluice"}}}
	hpa := object{file: "hpa.yaml", m: map[string]any{"kind": "HorizontalPodAutoscaler", "metadata": map[string]any{"name": "sluice"}}}
	for _, tc := range []struct {
		name string
		objs []object
		bad  bool
	}{
		{"KEDA with a fixed instances", []object{cm("  instances: 2\n"), so}, true},
		{"KEDA with instances 1", []object{cm("  instances: 1\n"), so}, true},
		{"HPA with the static default", []object{cm("  max_units_per_minute: 600\n"), hpa}, true},
		{"KEDA with static named", []object{cm("  share: {mode: static}\n"), so}, true},
		{"KEDA with members", []object{cm("  share: {mode: members}\n"), so}, false},
		{"HPA with leases", []object{cm("  share:\n    mode: leases\n"), hpa}, false},
		{"a fixed count without an autoscaler", []object{cm("  instances: 3\n")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if p := checkExample(tc.objs); (len(p) > 0) != tc.bad {
				t.Errorf("problems %q, want a problem: %v", p, tc.bad)
			}
		})
	}
	md := "# T\n\n## On Kubernetes\n\n```yaml\nlimiter:\n  instances: 4\n```\n\n## systemd\n\n```yaml\nlimiter:\n  instances: 2\n```\n"
	s := autoscaledSnippets(md)
	if len(s) != 1 || s[0].section != "On Kubernetes" {
		t.Fatalf("snippets %+v, want the one under On Kubernetes", s)
	}
	if why, _ := fixedShare(s[0].code); why == "" {
		t.Error("instances: 4 under On Kubernetes not reported")
	}
}
