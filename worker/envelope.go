package worker

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/net/http/httpguts"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/field"
	"github.com/sluicehq/sluice/limiter/control"
)

// Envelope modes accepted in JobsConfig.Envelope.
const (
	// EnvelopeJSON reads each message as a JSON job envelope.
	EnvelopeJSON = "json"
	// EnvelopeRaw sends each message's whole payload as the request body;
	// the job type comes from the TypeHeader message header.
	EnvelopeRaw = "raw"
)

// TypeHeader is the message header that names the job type in raw mode.
const TypeHeader = "Sluice-Type"

// DefaultMaxEnvelopeBytes is the default JobsConfig.MaxEnvelopeBytes (1 MiB).
const DefaultMaxEnvelopeBytes = 1 << 20

// MaxMaxEnvelopeBytes bounds jobs.max_envelope_bytes: 64 MiB, above every
// source's message limit (Pub/Sub's is 10 MB, a NATS server's at most
// 64 MiB).
const MaxMaxEnvelopeBytes = 64 << 20

// JobType holds the defaults for one job type.
type JobType struct {
	Method string  // HTTP method; default POST
	Path   string  // path on the target, starting with "/"; default "/"
	Cost   float64 // units per job of this type; 0 means free (never waits)
}

// defaultJobType is used for a job whose type is not configured (when
// JobsConfig.Strict is off and the default type is not configured either).
var defaultJobType = JobType{Method: http.MethodPost, Path: "/", Cost: 1}

// JobsConfig says how messages become jobs. The zero value decodes JSON
// envelopes, accepts any type as POST / at 1 unit, and caps envelopes at
// DefaultMaxEnvelopeBytes.
type JobsConfig struct {
	Envelope         string // EnvelopeJSON (default) or EnvelopeRaw
	Strict           bool   // reject types that are not in Types
	TrustJobCost     bool   // an envelope's cost overrides its type's cost
	MaxEnvelopeBytes int    // larger payloads are invalid; default 1 MiB
	// DefaultType is the type of a job that names none; default "default".
	DefaultType string
	// Types maps a type name to its defaults. A job of a type not listed
	// here takes Types[DefaultType] if that exists, else POST / at 1 unit.
	Types map[string]JobType
}

func (c JobsConfig) withDefaults() JobsConfig {
	if c.Envelope == "" {
		c.Envelope = EnvelopeJSON
	}
	if c.MaxEnvelopeBytes == 0 {
		c.MaxEnvelopeBytes = DefaultMaxEnvelopeBytes
	}
	if c.DefaultType == "" {
		c.DefaultType = "default"
	}
	return c
}

// Validate reports every option that breaks its rule, each as a
// *field.Error named as in the config file's jobs section
// ("types.resize.path").
func (c JobsConfig) Validate() error {
	c = c.withDefaults()
	var errs []error
	switch c.Envelope {
	case EnvelopeJSON, EnvelopeRaw:
	default:
		errs = append(errs, field.Invalid("envelope", "must be %q or %q, got %q", EnvelopeJSON, EnvelopeRaw, c.Envelope))
	}
	if c.MaxEnvelopeBytes < 0 {
		errs = append(errs, field.Invalid("max_envelope_bytes", "must be > 0, got %d", c.MaxEnvelopeBytes))
	} else if c.MaxEnvelopeBytes > MaxMaxEnvelopeBytes {
		errs = append(errs, field.Invalid("max_envelope_bytes", "must be <= %d, got %d", MaxMaxEnvelopeBytes, c.MaxEnvelopeBytes))
	}
	if c.Strict && len(c.Types) == 0 {
		errs = append(errs, field.Invalid("strict", "needs at least one type in types, got none"))
	}
	for _, name := range slices.Sorted(maps.Keys(c.Types)) {
		errs = append(errs, c.Types[name].validate(field.Join("types", name))...)
	}
	return errors.Join(errs...)
}

// validate reports the type's bad fields, named under prefix.
func (t JobType) validate(prefix string) []error {
	var errs []error
	if t.Method != "" {
		if e := call.CheckMethod(prefix+".method", t.Method); e != nil {
			errs = append(errs, e)
		}
	}
	if t.Path != "" {
		if e := call.CheckPath(prefix+".path", t.Path); e != nil {
			errs = append(errs, e)
		}
	}
	if e := control.CheckCost(prefix+".cost", t.Cost); e != nil {
		errs = append(errs, e)
	}
	return errs
}

// Job is a decoded job: what to send and what it costs.
type Job struct {
	ID     string
	Type   string
	Method string
	Path   string
	Header http.Header
	Body   []byte
	Cost   float64
}

// InvalidJobError says why a message is not a job. Retrying cannot help; the
// worker dead-letters the message at once with Reason.
type InvalidJobError struct {
	Reason Reason
	Detail string
}

func (e *InvalidJobError) Error() string {
	return "worker: invalid job: " + e.Reason.String() + ": " + e.Detail
}

func invalid(reason Reason, format string, args ...any) error {
	return &InvalidJobError{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// Decoder turns message payloads into jobs. It is safe for concurrent use.
type Decoder struct {
	cfg JobsConfig
}

// NewDecoder returns a decoder for cfg, or the error of cfg.Validate.
func NewDecoder(cfg JobsConfig) (*Decoder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Decoder{cfg: cfg.withDefaults()}, nil
}

// envHeaders holds the maps that Decode reads envelopes' headers into.
var envHeaders = sync.Pool{New: func() any { return map[string]string{} }}

// envelope is the JSON job envelope. Every field is optional.
type envelope struct {
	ID         *string           `json:"id"`
	Type       *string           `json:"type"`
	Method     *string           `json:"method"`
	Path       *string           `json:"path"`
	Headers    map[string]string `json:"headers"`
	Body       json.RawMessage   `json:"body"`
	BodyBase64 *string           `json:"body_base64"`
	Cost       json.RawMessage   `json:"cost"`
}

// Decode decodes one message. id is the message's id (used when the
// envelope has none) and header its headers (raw mode reads the type from
// them). An invalid message gives an *InvalidJobError. A payload over
// MaxEnvelopeBytes is rejected before any of it is parsed.
func (d *Decoder) Decode(id string, header map[string]string, data []byte) (Job, error) {
	job := Job{ID: id}
	if len(data) > d.cfg.MaxEnvelopeBytes {
		return job, invalid(ReasonTooLarge, "payload is %d bytes, max_envelope_bytes is %d", len(data), d.cfg.MaxEnvelopeBytes)
	}
	if d.cfg.Envelope == EnvelopeRaw {
		job.Type = lookupHeader(header, TypeHeader)
		if err := d.applyType(&job, nil, nil); err != nil {
			return job, err
		}
		job.Body = data
		return job, nil
	}

	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return job, invalid(ReasonBadJSON, "payload is not a JSON object")
	}
	// The envelope's headers are read into a map that is used again: the
	// job's Header is a map of its own.
	env := envelope{Headers: envHeaders.Get().(map[string]string)}
	defer func() {
		if env.Headers != nil { // "headers": null made it nil
			clear(env.Headers)
			envHeaders.Put(env.Headers)
		}
	}()
	if err := json.Unmarshal(trimmed, &env); err != nil {
		return job, invalid(ReasonBadJSON, "%s", jsonErrorText(err))
	}
	if env.ID != nil && *env.ID != "" {
		job.ID = *env.ID
	}
	if env.Type != nil {
		job.Type = *env.Type
	}
	cost, hasCost, err := parseCost(env.Cost)
	if err != nil {
		return job, err
	}
	var costp *float64
	if hasCost {
		costp = &cost
	}
	if err := d.applyType(&job, &env, costp); err != nil {
		return job, err
	}
	if len(env.Headers) > 0 {
		job.Header = make(http.Header, len(env.Headers))
		vals := make([]string, len(env.Headers)) // the values share one array
		i := 0
		for k, v := range env.Headers {
			if !httpguts.ValidHeaderFieldName(k) {
				return job, invalid(ReasonBadHeader, "header name %q is not a token", k)
			}
			if !httpguts.ValidHeaderFieldValue(v) {
				return job, invalid(ReasonBadHeader, "header %q has a control character in its value", k)
			}
			vals[i] = v
			job.Header[http.CanonicalHeaderKey(k)] = vals[i : i+1 : i+1]
			i++
		}
	}
	hasBody := len(env.Body) > 0 && string(env.Body) != "null"
	switch {
	case hasBody && env.BodyBase64 != nil:
		return job, invalid(ReasonBodyConflict, "both body and body_base64 are set")
	case env.BodyBase64 != nil:
		b, err := base64.StdEncoding.DecodeString(*env.BodyBase64)
		if err != nil {
			return job, invalid(ReasonBadBodyBase64, "body_base64 is not standard base64")
		}
		job.Body = b
	case hasBody && env.Body[0] == '"':
		var s string
		if err := json.Unmarshal(env.Body, &s); err != nil {
			return job, invalid(ReasonBadJSON, "body: %s", jsonErrorText(err))
		}
		job.Body = []byte(s)
	case hasBody:
		// Any other JSON value is sent as it stands (Unmarshal gave
		// env.Body its own copy of the bytes).
		job.Body = env.Body
	}
	return job, nil
}

// applyType fills the type, method, path and cost from the type's defaults,
// the envelope (may be nil) and the envelope's cost (nil when absent).
func (d *Decoder) applyType(job *Job, env *envelope, cost *float64) error {
	if job.Type == "" {
		job.Type = d.cfg.DefaultType
	}
	t, ok := d.cfg.Types[job.Type]
	if !ok {
		if d.cfg.Strict {
			return invalid(ReasonUnknownType, "type %q is not configured (jobs.strict is on)", truncate(job.Type, 64))
		}
		if t, ok = d.cfg.Types[d.cfg.DefaultType]; !ok {
			t = defaultJobType
		}
	}
	job.Method, job.Path, job.Cost = t.Method, t.Path, t.Cost
	if job.Method == "" {
		job.Method = defaultJobType.Method
	}
	if job.Path == "" {
		job.Path = defaultJobType.Path
	}
	if env != nil {
		if env.Method != nil && *env.Method != "" {
			if e := call.CheckMethod("method", *env.Method); e != nil {
				return invalid(ReasonBadMethod, "%v", e)
			}
			job.Method = *env.Method
		}
		if env.Path != nil && *env.Path != "" {
			if e := call.CheckPath("path", *env.Path); e != nil {
				return invalid(ReasonBadPath, "%v", e)
			}
			job.Path = *env.Path
		}
	}
	if cost != nil && d.cfg.TrustJobCost {
		job.Cost = *cost
	}
	return nil
}

// parseCost reads the envelope's cost: absent (or null), or a finite
// number >= 0.
func parseCost(raw json.RawMessage) (float64, bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false, nil
	}
	if c := raw[0]; c != '-' && (c < '0' || c > '9') {
		return 0, false, invalid(ReasonBadCost, "cost must be a number, got %s", truncate(string(raw), 32))
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || control.CheckCost("cost", v) != nil {
		return 0, false, invalid(ReasonBadCost, "cost must be a finite number >= 0, got %s", truncate(string(raw), 32))
	}
	return v, true, nil
}

func lookupHeader(h map[string]string, name string) string {
	if v, ok := h[name]; ok {
		return v
	}
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// jsonErrorText describes a decode error without quoting the payload.
func jsonErrorText(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	case errors.As(err, &te):
		if te.Field != "" {
			return fmt.Sprintf("field %s: must be a %s, got %s", te.Field, te.Type, te.Value)
		}
		return fmt.Sprintf("must be a %s, got %s", te.Type, te.Value)
	default:
		return "malformed JSON"
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
