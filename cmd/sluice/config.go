package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/sinks/httpapi"
	"github.com/sluicehq/sluice/worker"
)

// config is the whole config file. Every section and every field is
// optional; what is missing keeps its default (defaultConfig). The file is
// decoded strictly: an unknown key is an error naming its line. Scalar
// values may use ${VAR} and ${VAR:-default}; $${ is a literal ${.
type config struct {
	Source      sourceConfig   `yaml:"source"`
	Target      targetConfig   `yaml:"target"`
	Jobs        jobsConfig     `yaml:"jobs"`
	Limiter     limiterOptions `yaml:"limiter"`
	Worker      workerConfig   `yaml:"worker"`
	Results     resultsConfig  `yaml:"results"`
	DeadLetters outputConfig   `yaml:"dead_letters"`
	Metrics     opsConfig      `yaml:"metrics"`
	Log         logConfig      `yaml:"log"`
	// Observability is where spans are exported (OTLP/HTTP).
	Observability tracing.Config `yaml:"observability"`

	// lines maps a field path ("limiter.burst") to the line it was set on.
	lines map[string]int
	// secrets are values that must never be printed: target header values
	// and every value taken from the environment.
	secrets []string
}

// targetConfig is the `target:` section: the API the jobs are sent to.
type targetConfig struct {
	BaseURL          string          `yaml:"base_url"`
	Timeout          limiterDuration `yaml:"timeout"`
	MaxResponseBytes int64           `yaml:"max_response_bytes"`
	// Headers are set on every request. Their values are secret: they may
	// come from ${ENV} and are never printed.
	Headers                  map[string]string        `yaml:"headers"`
	AllowJobHeaders          []string                 `yaml:"allow_job_headers"`
	RetryAfterHeaders        []retryAfterHeaderConfig `yaml:"retry_after_headers"`
	ThrottleStatuses         []int                    `yaml:"throttle_statuses"`
	ThrottleStatusesWithWait []int                    `yaml:"throttle_statuses_with_wait"`
	MaxRetryAfter            limiterDuration          `yaml:"max_retry_after"`
	UserAgent                string                   `yaml:"user_agent"`
	// RateLimitHeaders names the quota headers the limiter plans with:
	// none (default), ietf or x-ratelimit; RateLimitReset says how
	// X-RateLimit-Reset reads: delta (default) or unix.
	RateLimitHeaders string `yaml:"rate_limit_headers"`
	RateLimitReset   string `yaml:"rate_limit_reset"`
	// LogURLPath shows URL paths in logs; by default they are secret.
	LogURLPath bool `yaml:"log_url_path"`
	// IdempotencyHeader carries the job id on every attempt; "" sends none.
	IdempotencyHeader string `yaml:"idempotency_header"`
}

type retryAfterHeaderConfig struct {
	Name string `yaml:"name"`
	Unit string `yaml:"unit"` // seconds (default), milliseconds or unix
}

// jobsConfig is the `jobs:` section: how messages become requests.
type jobsConfig struct {
	Envelope         string                   `yaml:"envelope"` // json or raw
	Strict           bool                     `yaml:"strict"`
	TrustJobCost     bool                     `yaml:"trust_job_cost"`
	MaxEnvelopeBytes int                      `yaml:"max_envelope_bytes"`
	DefaultType      string                   `yaml:"default_type"`
	Types            map[string]jobTypeConfig `yaml:"types"`
}

type jobTypeConfig struct {
	Method string   `yaml:"method"`
	Path   string   `yaml:"path"`
	Cost   *float64 `yaml:"cost"` // default 1
}

// workerConfig is the `worker:` section.
type workerConfig struct {
	ID                 string          `yaml:"id"`
	MaxInFlight        int             `yaml:"max_in_flight"`
	MaxAttempts        int             `yaml:"max_attempts"`
	Backoff            backoffConfig   `yaml:"backoff"`
	MaxDeliveries      int             `yaml:"max_deliveries"`
	MaxRedeliveryDelay limiterDuration `yaml:"max_redelivery_delay"`
	RejectedDelay      limiterDuration `yaml:"rejected_delay"`
	ShutdownTimeout    limiterDuration `yaml:"shutdown_timeout"`
}

type backoffConfig struct {
	Base limiterDuration `yaml:"base"`
	Cap  limiterDuration `yaml:"cap"`
}

// Output kinds accepted in results.kind and dead_letters.kind.
const (
	outputNone   = "none"
	outputNATS   = "nats"
	outputPubSub = "pubsub"
	outputJSONL  = "jsonl"
)

// outputConfig is the `dead_letters:` section: where records go.
type outputConfig struct {
	Kind    string `yaml:"kind"`
	Subject string `yaml:"subject"` // nats
	Topic   string `yaml:"topic"`   // pubsub
	Path    string `yaml:"path"`    // jsonl
}

// resultsConfig is the `results:` section.
type resultsConfig struct {
	Kind    string `yaml:"kind"`
	Subject string `yaml:"subject"`
	Topic   string `yaml:"topic"`
	Path    string `yaml:"path"`
	// Headers are the response headers kept in a result record.
	Headers []string `yaml:"headers"`
}

func (r resultsConfig) output() outputConfig {
	return outputConfig{Kind: r.Kind, Subject: r.Subject, Topic: r.Topic, Path: r.Path}
}

// logConfig is the `log:` section.
type logConfig struct {
	Format string `yaml:"format"` // auto, text or json
	Level  string `yaml:"level"`  // debug, info, warn or error
}

// Defaults of the sections this file owns.
const (
	defaultMaxInFlight = 64
	defaultJobType     = "default"
)

func defaultConfig() config {
	return config{
		Source: defaultSourceConfig(),
		Target: targetConfig{
			Timeout:           limiterDuration(httpapi.DefaultTimeout),
			MaxResponseBytes:  httpapi.DefaultMaxResponseBytes,
			MaxRetryAfter:     limiterDuration(call.DefaultMaxRetryAfter),
			UserAgent:         httpapi.DefaultUserAgent,
			IdempotencyHeader: httpapi.DefaultIdempotencyHeader,
			RateLimitHeaders:  "none",
			RateLimitReset:    "delta",
		},
		Jobs: jobsConfig{
			Envelope:         worker.EnvelopeJSON,
			MaxEnvelopeBytes: worker.DefaultMaxEnvelopeBytes,
			DefaultType:      defaultJobType,
		},
		Limiter: defaultLimiterOptions(),
		Worker: workerConfig{
			MaxInFlight:        defaultMaxInFlight,
			MaxAttempts:        worker.DefaultMaxAttempts,
			Backoff:            backoffConfig{Base: limiterDuration(worker.DefaultBackoffBase), Cap: limiterDuration(worker.DefaultBackoffCap)},
			MaxDeliveries:      worker.DefaultMaxDeliveries,
			MaxRedeliveryDelay: limiterDuration(worker.DefaultMaxRedeliveryDelay),
			RejectedDelay:      limiterDuration(worker.DefaultRejectedDelay),
			ShutdownTimeout:    limiterDuration(worker.DefaultShutdownTimeout),
		},
		Results:     resultsConfig{Kind: outputNone, Headers: []string{"Content-Type"}},
		DeadLetters: outputConfig{Kind: outputNATS},
		Metrics:     defaultOpsConfig(),
		Log:         logConfig{Format: "auto", Level: "info"},
		lines:       map[string]int{},
	}
}

// loadConfig reads and checks a config file.
func loadConfig(path string) (config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return config{}, fmt.Errorf("config: %w", err)
	}
	return parseConfig(data, os.LookupEnv)
}

// configErrors collects problems as "config: field: message (line N)".
type configErrors struct {
	lines map[string]int
	list  []string
}

func (e *configErrors) at(path string, line int, format string, args ...any) {
	msg := "config: " + path + ": " + fmt.Sprintf(format, args...)
	if line > 0 {
		msg += fmt.Sprintf(" (line %d)", line)
	}
	e.list = append(e.list, msg)
}

// add reports a problem with a field, at the line it was set on (if it was).
func (e *configErrors) add(path, format string, args ...any) {
	e.at(path, e.lineOf(path), format, args...)
}

// lineOf finds the line of path or of its nearest parent that was set.
func (e *configErrors) lineOf(path string) int {
	for p := path; p != ""; {
		if l, ok := e.lines[p]; ok {
			return l
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return 0
}

// addLib reports the errors of a library Validate or of a section's own
// validate: each line "pkg: field: message" becomes "config:
// section.field: message (line N)".
func (e *configErrors) addLib(section string, err error) {
	if err == nil {
		return
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		for _, pkg := range []string{"limiter: ", "httpapi: ", "worker: ", "jetstream: ", "gcppubsub: ", "config: "} {
			line = strings.TrimPrefix(line, pkg)
		}
		field, msg, ok := strings.Cut(line, ": ")
		if !ok || strings.ContainsAny(field, " ") {
			e.at(section, e.lineOf(section), "%s", line)
			continue
		}
		path := field
		if section != "" && !strings.HasPrefix(field, section+".") && field != section {
			path = section + "." + field
		}
		e.add(path, "%s", msg)
	}
}

func (e *configErrors) err(secrets []string) error {
	if len(e.list) == 0 {
		return nil
	}
	errs := make([]error, len(e.list))
	for i, m := range e.list {
		errs[i] = errors.New(redact(m, secrets))
	}
	return errors.Join(errs...)
}

// shownTarget is target.base_url as logs show it: "[redacted]" when a
// value read from the environment is in it (like a header value), else
// scheme://host[:port] with the path redacted unless target.log_url_path.
func (c *config) shownTarget(hc httpapi.Config) string {
	if redact(c.Target.BaseURL, c.secrets) != c.Target.BaseURL {
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

// parseConfig decodes a config file on top of the defaults, expands
// environment references with lookup, and validates every field. The error
// lists every problem, one per line; it never holds a secret value.
func parseConfig(data []byte, lookup func(string) (string, bool)) (config, error) {
	return parseConfigWith(data, lookup, nil, true)
}

// parseConfigWith is parseConfig with adjust applied after decoding and
// before validation (command-line flags that replace the file's values).
// needTarget requires target.base_url (the commands that do not call the
// target, such as enqueue and status, do not need it).
func parseConfigWith(data []byte, lookup func(string) (string, bool), adjust func(*config) error, needTarget bool) (config, error) {
	cfg := defaultConfig()
	errs := &configErrors{lines: cfg.lines}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return cfg, fmt.Errorf("config: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		// An empty file: every default.
		if adjust != nil {
			if err := adjust(&cfg); err != nil {
				return cfg, err
			}
		}
		return cfg, cfg.validate(errs, needTarget)
	}
	root := doc.Content[0]
	var secrets []string
	expandNode(root, lookup, errs, "", &secrets)
	d := &decoder{errs: errs}
	d.decode("", root, reflect.ValueOf(&cfg).Elem())
	for _, v := range cfg.Target.Headers {
		secrets = append(secrets, v)
	}
	if _, set := cfg.lines["dead_letters.kind"]; !set && cfg.Source.Kind == sourcePubSub {
		// Pub/Sub has no "subject next to the stream": without a
		// dead_letters section, the source's own dead_letter_topic keeps
		// the records (see source.pubsub.dead_letter_topic).
		cfg.DeadLetters.Kind = outputNone
	}
	auth := cfg.Source.JetStream.Auth
	secrets = append(secrets, auth.Password, auth.Token)
	cfg.secrets = secrets
	if len(errs.list) > 0 {
		return cfg, errs.err(secrets)
	}
	if adjust != nil {
		if err := adjust(&cfg); err != nil {
			return cfg, err
		}
	}
	return cfg, cfg.validate(errs, needTarget)
}

// expandNode expands ${VAR} and ${VAR:-default} in every scalar value
// under n (keys are left alone) and records the values taken from the
// environment as secrets.
func expandNode(n *yaml.Node, lookup func(string) (string, bool), errs *configErrors, path string, secrets *[]string) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			expandNode(n.Content[i+1], lookup, errs, joinPath(path, n.Content[i].Value), secrets)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			expandNode(c, lookup, errs, fmt.Sprintf("%s[%d]", path, i), secrets)
		}
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "$") {
			return
		}
		v, used, err := expandEnv(n.Value, lookup)
		if err != nil {
			errs.at(path, n.Line, "%v", err)
			return
		}
		*secrets = append(*secrets, used...)
		if v != n.Value {
			n.Value = v
			if n.Style == 0 {
				n.Tag = "" // let the expanded value resolve as if written out (a number, a bool)
			}
		}
	}
}

// expandEnv expands ${VAR} and ${VAR:-default}; $${ is a literal ${. A
// variable that is not set and has no default is an error naming it.
func expandEnv(s string, lookup func(string) (string, bool)) (string, []string, error) {
	var b strings.Builder
	var used []string
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return "", nil, errors.New(`unclosed "${" in value`)
			}
			expr := s[i+2 : i+end]
			name, def, hasDef := strings.Cut(expr, ":-")
			if !validEnvName(name) {
				return "", nil, fmt.Errorf("invalid environment variable name %q", name)
			}
			v, ok := lookup(name)
			if !ok || (hasDef && v == "") {
				if !hasDef {
					return "", nil, fmt.Errorf("environment variable %s is not set (use ${%s:-default} for a default)", name, name)
				}
				v = def
			} else {
				used = append(used, v)
			}
			b.WriteString(v)
			i += end + 1
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), used, nil
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// decoder walks a YAML node tree into a Go value by yaml tags, strictly.
type decoder struct {
	errs *configErrors
}

var durationType = reflect.TypeFor[limiterDuration]()

func (d *decoder) decode(path string, n *yaml.Node, v reflect.Value) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if _, ok := d.errs.lines[path]; !ok && path != "" {
		d.errs.lines[path] = n.Line
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return // "key:" with no value keeps the default
	}
	switch {
	case v.Type() == durationType:
		var s string
		if n.Kind != yaml.ScalarNode || n.Decode(&s) != nil {
			d.errs.at(path, n.Line, `must be a duration such as "10s"`)
			return
		}
		dur, err := time.ParseDuration(s)
		if err != nil {
			d.errs.at(path, n.Line, `must be a duration such as "10s" or "1m30s", got %q`, s)
			return
		}
		v.SetInt(int64(dur))
		return
	case v.Kind() == reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		d.decode(path, n, p.Elem())
		v.Set(p)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			d.errs.at(path, n.Line, "must be a mapping of keys to values")
			return
		}
		fields := map[string]int{}
		for i := range v.NumField() {
			tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
			if tag != "" && tag != "-" {
				fields[tag] = i
			}
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			p := joinPath(path, k.Value)
			idx, ok := fields[k.Value]
			switch {
			case !ok:
				d.errs.at(p, k.Line, "unknown key%s", suggest(k.Value, fields))
				continue
			case seen[k.Value]:
				d.errs.at(p, k.Line, "set twice")
				continue
			}
			seen[k.Value] = true
			d.errs.lines[p] = k.Line
			d.decode(p, val, v.Field(idx))
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			d.errs.at(path, n.Line, "must be a mapping")
			return
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			p := joinPath(path, k.Value)
			if k.Kind != yaml.ScalarNode || k.Value == "" {
				d.errs.at(p, k.Line, "keys must be non-empty strings")
				continue
			}
			if v.MapIndex(reflect.ValueOf(k.Value)).IsValid() {
				d.errs.at(p, k.Line, "set twice")
				continue
			}
			elem := reflect.New(v.Type().Elem()).Elem()
			d.errs.lines[p] = k.Line
			d.decode(p, val, elem)
			v.SetMapIndex(reflect.ValueOf(k.Value), elem)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.errs.at(path, n.Line, "must be a list")
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			d.decode(fmt.Sprintf("%s[%d]", path, i), c, s.Index(i))
		}
		v.Set(s)
	default:
		if n.Kind != yaml.ScalarNode {
			d.errs.at(path, n.Line, "must be %s", kindName(v.Kind()))
			return
		}
		if isInt(v.Kind()) && n.ShortTag() == "!!float" {
			// yaml would truncate 1.9 to 1: a fraction is an error.
			if f, err := strconv.ParseFloat(n.Value, 64); err != nil || f != math.Trunc(f) {
				d.errs.at(path, n.Line, "must be %s, got %q", kindName(v.Kind()), n.Value)
				return
			}
		}
		if err := n.Decode(v.Addr().Interface()); err != nil {
			d.errs.at(path, n.Line, "must be %s, got %q", kindName(v.Kind()), n.Value)
		}
	}
}

func isInt(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

func kindName(k reflect.Kind) string {
	switch k {
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	}
	return "a " + k.String()
}

// suggest names the closest known key, for a typo.
func suggest(key string, fields map[string]int) string {
	best, bestD := "", 3
	for f := range fields {
		if d := editDistance(key, f); d < bestD || d == bestD && f < best && best != "" {
			best, bestD = f, d
		}
	}
	if best == "" {
		names := make([]string, 0, len(fields))
		for f := range fields {
			names = append(names, f)
		}
		sort.Strings(names)
		return " (known: " + strings.Join(names, ", ") + ")"
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// validate checks every field and the sections' own rules, after decoding.
func (c *config) validate(errs *configErrors, needTarget bool) error {
	errs.addLib("", c.Source.validate())
	errs.addLib("observability", c.Observability.Validate())

	// target
	if c.Target.BaseURL == "" && needTarget {
		errs.add("target.base_url", "required: the API's base URL, such as https://api.example.com/v1")
	}
	if _, err := c.httpConfig(); err != nil {
		errs.addLib("target", err)
	}

	// jobs
	switch c.Jobs.Envelope {
	case worker.EnvelopeJSON, worker.EnvelopeRaw:
	default:
		errs.add("jobs.envelope", "must be %q or %q, got %q", worker.EnvelopeJSON, worker.EnvelopeRaw, c.Jobs.Envelope)
	}
	if c.Jobs.MaxEnvelopeBytes == 0 {
		errs.add("jobs.max_envelope_bytes", "must be > 0, got %d", c.Jobs.MaxEnvelopeBytes)
	}
	// The library's bounds (negative values, upper bounds).
	errs.addLib("", worker.JobsConfig{MaxEnvelopeBytes: c.Jobs.MaxEnvelopeBytes}.Validate())
	if c.Jobs.DefaultType == "" {
		errs.add("jobs.default_type", "must not be empty")
	}
	if c.Jobs.Strict && len(c.Jobs.Types) == 0 {
		errs.add("jobs.strict", "needs at least one type in jobs.types, got none")
	}
	for _, name := range sortedNames(c.Jobs.Types) {
		t := c.Jobs.Types[name]
		p := "jobs.types." + name
		if t.Method != "" && !validToken(t.Method) {
			errs.add(p+".method", "must be an HTTP method such as POST, got %q", t.Method)
		}
		if t.Path != "" && (!strings.HasPrefix(t.Path, "/") || strings.HasPrefix(t.Path, "//")) {
			errs.add(p+".path", `must be a path starting with a single "/", got %q`, t.Path)
		}
		if t.Cost != nil && (*t.Cost < 0 || math.IsNaN(*t.Cost) || math.IsInf(*t.Cost, 0)) {
			errs.add(p+".cost", "must be a number >= 0, got %v", *t.Cost)
		} else if lc, err := c.Limiter.config(); t.Cost != nil && err == nil && *t.Cost > lc.MaxCost() {
			// A job of this type could never be paid for within max_wait:
			// the worker would dead-letter every one (bad_cost).
			errs.add(p+".cost", "must be <= the limiter's cost bound %g (max_units_per_minute / instances over max_wait), got %g",
				lc.MaxCost(), *t.Cost)
		}
	}

	// limiter
	if _, err := c.Limiter.config(); err != nil {
		errs.addLib("limiter", err)
	}
	errs.addLib("", c.Limiter.Share.validate(c))

	// worker
	w := c.Worker
	for _, f := range []struct {
		path string
		v    int
	}{
		{"worker.max_in_flight", w.MaxInFlight}, {"worker.max_attempts", w.MaxAttempts}, {"worker.max_deliveries", w.MaxDeliveries},
	} {
		if f.v == 0 { // negative values and upper bounds are the library's
			errs.add(f.path, "must be > 0, got %d", f.v)
		}
	}
	errs.addLib("worker", worker.Config{MaxInFlight: w.MaxInFlight, MaxAttempts: w.MaxAttempts, MaxDeliveries: w.MaxDeliveries}.Validate())
	for _, f := range []struct {
		path string
		v    limiterDuration
	}{
		{"worker.backoff.base", w.Backoff.Base}, {"worker.backoff.cap", w.Backoff.Cap},
		{"worker.max_redelivery_delay", w.MaxRedeliveryDelay}, {"worker.rejected_delay", w.RejectedDelay},
		{"worker.shutdown_timeout", w.ShutdownTimeout},
	} {
		if f.v <= 0 {
			errs.add(f.path, "must be > 0, got %v", f.v)
		}
	}
	if w.Backoff.Base > 0 && w.Backoff.Cap < w.Backoff.Base {
		errs.add("worker.backoff.cap", "must be >= worker.backoff.base (%v), got %v", w.Backoff.Base, w.Backoff.Cap)
	}
	if w.MaxRedeliveryDelay > limiterDuration(12*time.Hour) {
		errs.add("worker.max_redelivery_delay", "must be <= 12h, got %v", w.MaxRedeliveryDelay)
	}
	if c.Limiter.Enabled && c.Limiter.QueueLimit > 0 && w.MaxInFlight > c.Limiter.QueueLimit {
		errs.add("worker.max_in_flight", "must be <= limiter.queue_limit (%d) so that waiting jobs are not rejected, got %d",
			c.Limiter.QueueLimit, w.MaxInFlight)
	}

	// outputs
	c.Results.output().validate("results", errs)
	c.DeadLetters.validate("dead_letters", errs)
	for i, h := range c.Results.Headers {
		if !validToken(h) {
			errs.add(fmt.Sprintf("results.headers[%d]", i), "must be a header name, got %q", h)
		}
	}
	if c.DeadLetters.Kind == outputNATS && c.Source.Kind != sourceJetStream {
		errs.add("dead_letters.kind", "%q needs source.kind %q (the records go to the same server), got source.kind %q",
			outputNATS, sourceJetStream, c.Source.Kind)
	}
	if c.Results.Kind == outputNATS && c.Source.Kind != sourceJetStream {
		errs.add("results.kind", "%q needs source.kind %q, got source.kind %q", outputNATS, sourceJetStream, c.Source.Kind)
	}

	// metrics, log
	errs.addLib("", c.Metrics.validate("metrics"))
	switch c.Log.Format {
	case "auto", "text", "json":
	default:
		errs.add("log.format", `must be "auto", "text" or "json", got %q`, c.Log.Format)
	}
	if _, err := parseLogLevel(c.Log.Level); err != nil {
		errs.add("log.level", `must be "debug", "info", "warn" or "error", got %q`, c.Log.Level)
	}
	return errs.err(c.secrets)
}

func (o outputConfig) validate(section string, errs *configErrors) {
	switch o.Kind {
	case outputNone:
	case outputNATS:
		if o.Subject != "" && (strings.ContainsAny(o.Subject, " \t\r\n*>") || strings.HasPrefix(o.Subject, ".") || strings.HasSuffix(o.Subject, ".")) {
			errs.add(section+".subject", "must be a NATS subject without wildcards, got %q", o.Subject)
		}
	case outputPubSub:
		if o.Topic == "" {
			errs.add(section+".topic", "required when %s.kind is %q", section, outputPubSub)
		}
	case outputJSONL:
		if o.Path == "" {
			errs.add(section+".path", "required when %s.kind is %q", section, outputJSONL)
		}
	default:
		errs.add(section+".kind", "must be one of none, nats, pubsub, jsonl, got %q", o.Kind)
	}
}

// httpConfig converts the target section to an httpapi.Config and
// validates it.
func (c *config) httpConfig() (httpapi.Config, error) {
	t := c.Target
	hc := httpapi.Config{
		BaseURL:           t.BaseURL,
		Timeout:           time.Duration(t.Timeout),
		MaxResponseBytes:  t.MaxResponseBytes,
		MaxConns:          c.Worker.MaxInFlight,
		Headers:           t.Headers,
		AllowJobHeaders:   t.AllowJobHeaders,
		ResponseHeaders:   c.Results.Headers,
		UserAgent:         t.UserAgent,
		LogURLPath:        t.LogURLPath,
		IdempotencyHeader: t.IdempotencyHeader,
		Classifier: call.Classifier{
			ThrottleStatuses:         t.ThrottleStatuses,
			ThrottleStatusesWithWait: t.ThrottleStatusesWithWait,
			MaxRetryAfter:            time.Duration(t.MaxRetryAfter),
		},
	}
	if hc.ResponseHeaders == nil {
		hc.ResponseHeaders = []string{}
	}
	var errs []error
	for i, h := range t.RetryAfterHeaders {
		unit := call.UnitSeconds
		if h.Unit != "" {
			u, err := call.ParseHeaderUnit(h.Unit)
			if err != nil {
				errs = append(errs, fmt.Errorf("retry_after_headers[%d].unit: must be seconds, milliseconds or unix, got %q", i, h.Unit))
				continue
			}
			unit = u
		}
		hc.Classifier.RetryAfterHeaders = append(hc.Classifier.RetryAfterHeaders, call.RetryAfterHeader{Name: h.Name, Unit: unit})
	}
	rl, err := rateLimitHeaders(t.RateLimitHeaders, t.RateLimitReset)
	if err != nil {
		errs = append(errs, err)
	}
	hc.Classifier.RateLimitHeaders = rl
	if t.BaseURL != "" {
		if err := hc.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return hc, errors.Join(errs...)
}

// rateLimitHeaders reads target.rate_limit_headers and
// target.rate_limit_reset (docs/target.md, "Quota headers").
func rateLimitHeaders(format, reset string) (call.RateLimitHeaders, error) {
	var rl call.RateLimitHeaders
	if format != "" {
		f, err := call.ParseRateLimitFormat(format)
		if err != nil {
			return rl, fmt.Errorf(`rate_limit_headers: must be none, ietf or x-ratelimit, got %q`, format)
		}
		rl.Format = f
	}
	switch reset {
	case "", "delta":
	case "unix":
		if rl.Format != call.RateLimitX {
			return rl, fmt.Errorf(`rate_limit_reset: unix applies to rate_limit_headers: x-ratelimit only, got rate_limit_headers: %v`, rl.Format)
		}
		rl.Reset = call.UnitUnixTime
	default:
		return rl, fmt.Errorf(`rate_limit_reset: must be delta or unix, got %q`, reset)
	}
	return rl, nil
}

// workerConfig converts the worker, jobs and results sections.
func (c *config) workerConfig(ackWait time.Duration) worker.Config {
	w := c.Worker
	types := make(map[string]worker.JobType, len(c.Jobs.Types))
	for name, t := range c.Jobs.Types {
		cost := 1.0
		if t.Cost != nil {
			cost = *t.Cost
		}
		types[name] = worker.JobType{Method: strings.ToUpper(t.Method), Path: t.Path, Cost: cost}
	}
	wc := worker.Config{
		ID:                 w.ID,
		MaxInFlight:        w.MaxInFlight,
		MaxAttempts:        w.MaxAttempts,
		BackoffBase:        time.Duration(w.Backoff.Base),
		BackoffCap:         time.Duration(w.Backoff.Cap),
		MaxDeliveries:      w.MaxDeliveries,
		MaxRedeliveryDelay: time.Duration(w.MaxRedeliveryDelay),
		RejectedDelay:      time.Duration(w.RejectedDelay),
		ShutdownTimeout:    time.Duration(w.ShutdownTimeout),
		AckWait:            ackWait,
		ResultHeaders:      c.Results.Headers,
		Jobs: worker.JobsConfig{
			Envelope:         c.Jobs.Envelope,
			Strict:           c.Jobs.Strict,
			TrustJobCost:     c.Jobs.TrustJobCost,
			MaxEnvelopeBytes: c.Jobs.MaxEnvelopeBytes,
			DefaultType:      c.Jobs.DefaultType,
			Types:            types,
		},
	}
	return wc
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}
