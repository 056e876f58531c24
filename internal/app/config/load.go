package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/field"
	"github.com/sluicehq/sluice/internal/schema"
	"github.com/sluicehq/sluice/sinks/httpapi"
)

// Options adjust a load.
type Options struct {
	// Lookup reads an environment variable; nil is os.LookupEnv.
	Lookup func(string) (string, bool)
	// Adjust runs after decoding and before the checks: the command-line
	// flags that replace the file's values. It should call Config.SetBy
	// for what it sets (a problem with it is the flag's, not the file's
	// line).
	Adjust func(*Config) error
	// Set are --set arguments, "key.path=value", applied over the file
	// and the environment's overrides (NATS_URL, GOOGLE_CLOUD_PROJECT) and
	// under Adjust. The value is YAML, typed by the option it sets.
	Set []string
	// NoTarget leaves target.base_url optional: the commands that do not
	// call the target (enqueue, status, dlq) do not need it.
	NoTarget bool
}

// MaxFileBytes bounds a config file: no config comes near it, and a path
// such as /dev/zero must fail fast rather than fill the memory.
const MaxFileBytes = 4 << 20

// Load reads and checks a config file.
func Load(path string, o Options) (Config, error) {
	data, err := ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	return Parse(data, o)
}

// ReadFile reads a config file of at most MaxFileBytes. The error names
// the file and the bound.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("config: %s: larger than %d MiB, the most a config file may be", path, MaxFileBytes>>20)
	}
	return data, nil
}

// Parse decodes a config file on top of the defaults, expands environment
// references, applies o.Adjust and checks every field: exactly what `sluice
// run` checks before it opens anything. The error lists every problem, one
// per line, each a *Problem; it never holds a secret value.
func Parse(data []byte, o Options) (Config, error) {
	if o.Lookup == nil {
		o.Lookup = os.LookupEnv
	}
	cfg := Default()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return cfg, fmt.Errorf("config: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	ovs, err := overrides(o.Set, o.Lookup)
	if err != nil {
		return cfg, err
	}
	for _, ov := range ovs {
		ov.apply(&doc)
	}
	var errs []error
	if doc.Kind != 0 && len(doc.Content) > 0 {
		errs = append(errs, expand(doc.Content[0], o.Lookup, "", &cfg.Secrets))
		tree, err := fromYAML(doc.Content[0])
		if err != nil {
			return cfg, err
		}
		errs = append(errs, schema.Decode("", tree, &cfg, cfg.Lines))
	}
	for _, ov := range ovs {
		// The key may be the file's, and keep its line: the value is not.
		cfg.SetBy(strings.Join(ov.path, "."), ov.from)
	}
	for _, v := range cfg.Target.Headers {
		cfg.Secrets = append(cfg.Secrets, v)
	}
	auth := cfg.Source.JetStream.Auth
	cfg.Secrets = append(cfg.Secrets, auth.Password, auth.Token)
	if _, set := cfg.Lines["dead_letters.kind"]; !set && cfg.Source.Kind == SourcePubSub {
		// Pub/Sub has no "subject next to the stream": without a
		// dead_letters section, the source's own dead_letter_topic keeps
		// the records (see source.pubsub.dead_letter_topic).
		cfg.DeadLetters.Kind = OutputNone
	}
	if o.Adjust != nil {
		if err := o.Adjust(&cfg); err != nil {
			return cfg, err
		}
	}
	errs = append(errs, cfg.Check(!o.NoTarget))
	return cfg, cfg.problems(errors.Join(errs...))
}

// Problem is one config value that breaks a rule: its path in the file, the
// rule, and where the value was set: the line of the file (0 when it was
// not set in the file), or what set it over the file (From: a flag, a
// --set argument, an environment variable).
type Problem struct {
	Field  string
	Reason string
	Line   int
	From   string
}

func (p *Problem) Error() string {
	msg := "config: " + p.Field + ": " + p.Reason
	if p.Field == "" {
		msg = "config: " + p.Reason
	}
	switch {
	case p.From != "":
		msg += " (from " + p.From + ")"
	case p.Line > 0:
		msg += fmt.Sprintf(" (line %d)", p.Line)
	}
	return msg
}

// problems turns the field errors of err into Problems with where each
// value was set, with every secret redacted. They are in the order of the
// file's lines, those set elsewhere last; a problem whose rule names
// another field that has a problem of its own is left out: it follows
// from that one (an unknown source.kind makes the dead letters' kind
// "nats" wrong too).
func (c *Config) problems(err error) error {
	list := dropFollowOns(field.Flatten(err))
	if len(list) == 0 {
		return nil
	}
	ps := make([]*Problem, len(list))
	for i, fe := range list {
		line, from := c.origin(fe.Field)
		ps[i] = &Problem{Field: fe.Field, Reason: redact(fe.Reason, c.Secrets), Line: line, From: from}
	}
	slices.SortStableFunc(ps, func(a, b *Problem) int {
		switch {
		case a.Line == b.Line:
			return 0
		case a.Line == 0:
			return 1
		case b.Line == 0:
			return -1
		}
		return a.Line - b.Line
	})
	out := make([]error, len(ps))
	for i, p := range ps {
		out[i] = p
	}
	return errors.Join(out...)
}

// dropFollowOns leaves out each problem whose reason names the field of
// another problem, by its path or, in the same section, by its key, when
// that one does not name it back.
func dropFollowOns(list []*field.Error) []*field.Error {
	names := func(a, b *field.Error) bool { // a's reason names b's field
		if a.Field == b.Field || b.Field == "" {
			return false
		}
		if mentions(a.Reason, b.Field) {
			return true
		}
		i, j := strings.LastIndexByte(a.Field, '.'), strings.LastIndexByte(b.Field, '.')
		return i >= 0 && i == j && a.Field[:i] == b.Field[:j] && mentions(a.Reason, b.Field[j+1:])
	}
	var out []*field.Error
next:
	for _, a := range list {
		for _, b := range list {
			if names(a, b) && !names(b, a) {
				continue next
			}
		}
		out = append(out, a)
	}
	return out
}

// mentions reports whether s holds name as a whole word: not inside a
// longer key or path.
func mentions(s, name string) bool {
	word := func(c byte) bool {
		return c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	for i := 0; ; {
		k := strings.Index(s[i:], name)
		if k < 0 {
			return false
		}
		k += i
		end := k + len(name)
		if (k == 0 || !word(s[k-1])) && (end == len(s) || !word(s[end])) {
			return true
		}
		i = k + 1
	}
}

// ShownTarget is target.base_url as logs show it: "[redacted]" when a value
// read from the environment is in it (like a header value), else
// scheme://host[:port] with the path redacted unless target.log_url_path
// (hc is the section converted by HTTPConfig).
func (c *Config) ShownTarget(hc httpapi.Config) string {
	if redact(c.Target.BaseURL, c.Secrets) != c.Target.BaseURL {
		return "[redacted]"
	}
	return hc.ShownBaseURL()
}

// redact hides every secret of 4 bytes or more in s.
func redact(s string, secrets []string) string {
	sorted := append([]string(nil), secrets...)
	sort.Slice(sorted, func(i, j int) bool { return len(sorted[i]) > len(sorted[j]) })
	for _, v := range sorted {
		if len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	return s
}
