package config

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// EnvConfigFile names the config file when a command is given none (-c).
const EnvConfigFile = "SLUICE_CONFIG"

// envOverrides are the environment variables that set a config value, and
// the value they set. They apply when set and not empty, over the file and
// under --set and the command-line flags. Their values are secrets, as
// every value read from the environment (a NATS URL may hold a password).
var envOverrides = []struct{ Env, Path string }{
	{"NATS_URL", "source.jetstream.url"},
	{"GOOGLE_CLOUD_PROJECT", "source.pubsub.project"},
}

// EnvOverrides lists the environment variables that set a config value,
// each with the value's path, for help texts and docs.
func EnvOverrides() [][2]string {
	out := make([][2]string, len(envOverrides))
	for i, o := range envOverrides {
		out[i] = [2]string{o.Env, o.Path}
	}
	return out
}

// override is one value set over the file: by --set or the environment.
type override struct {
	path  []string
	value *yaml.Node
	from  string // "--set worker.max_in_flight=8", or the variable's name
}

// MaxSetBytes bounds the value of a --set argument: a value is one option
// (a scalar, a short list or map), never a file's worth.
const MaxSetBytes = 64 << 10

// parseSet reads one --set argument, "key.path=value". The value is YAML
// (a scalar, or a flow list or map such as [429,503]); it is typed by the
// option it sets, as a value in the file is.
func parseSet(arg string) (override, error) {
	key, val, ok := strings.Cut(arg, "=")
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		return override{}, fmt.Errorf("config: --set %q: must be key.path=value", arg)
	}
	path := strings.Split(key, ".")
	for _, p := range path {
		if p == "" {
			return override{}, fmt.Errorf("config: --set %q: %q is not a key path", arg, key)
		}
	}
	if len(val) > MaxSetBytes {
		return override{}, fmt.Errorf("config: --set %s: the value is %d bytes, more than %d KiB", key, len(val), MaxSetBytes>>10)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(val), &doc); err != nil {
		return override{}, fmt.Errorf("config: --set %s: the value is not YAML: %s", key, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: ""}
	if len(doc.Content) > 0 {
		n = doc.Content[0]
	}
	noLines(n)
	return override{path: path, value: n, from: "--set " + key}, nil
}

// overrides returns the environment's overrides, then the --set ones: the
// later wins.
func overrides(set []string, lookup func(string) (string, bool)) ([]override, error) {
	var out []override
	for _, e := range envOverrides {
		if v, ok := lookup(e.Env); ok && v != "" {
			// Expanded like a ${VAR} in the file, so the value is a secret.
			n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "${" + e.Env + "}"}
			out = append(out, override{path: strings.Split(e.Path, "."), value: n, from: e.Env})
		}
	}
	for _, s := range set {
		o, err := parseSet(s)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// apply sets o's value in the document root (a mapping, created when the
// file is empty), making the mappings on its path as needed.
func (o override) apply(doc *yaml.Node) {
	if doc.Kind != yaml.DocumentNode {
		*doc = yaml.Node{Kind: yaml.DocumentNode}
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		doc.Content = []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}
	}
	m := doc.Content[0]
	for i, key := range o.path {
		last := i == len(o.path)-1
		var v *yaml.Node
		for j := 0; j+1 < len(m.Content); j += 2 {
			if m.Content[j].Value == key {
				v = m.Content[j+1]
			}
		}
		if v == nil {
			v = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
		}
		if last {
			*v = *o.value
			return
		}
		if v.Kind != yaml.MappingNode {
			*v = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		}
		m = v
	}
}

// SetBy records that the value at path, and everything under it, was set
// over the file by from (a flag such as "--rate", "--set key.path", an
// environment variable): a problem with it names from, not a line of the
// file.
func (c *Config) SetBy(path, from string) {
	for p := range c.Lines {
		if p == path || strings.HasPrefix(p, path+".") || strings.HasPrefix(p, path+"[") {
			delete(c.Lines, p)
		}
	}
	if c.From == nil {
		c.From = map[string]string{}
	}
	c.From[path] = from
}

// origin returns where the value at path, or its nearest parent that was
// set, came from: a line of the file, or what set it over the file
// (SetBy). Both are zero when none was set.
func (c *Config) origin(path string) (line int, from string) {
	for p := path; p != ""; {
		if f, ok := c.From[p]; ok {
			return 0, f
		}
		if n, ok := c.Lines[p]; ok {
			return n, ""
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return 0, ""
}

// noLines clears the line numbers of n and its children: a value set over
// the file was not written on any of its lines.
func noLines(n *yaml.Node) {
	n.Line, n.Column = 0, 0
	for _, c := range n.Content {
		noLines(c)
	}
}
