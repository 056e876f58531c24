package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/limiter"
)

// limiterOptions is the `limiter:` section of the config file and the
// "options" object of a trace (`sluice limiter replay`). Rates are units per
// minute for the whole budget; durations are Go duration strings. A missing
// option keeps its default (defaultLimiterOptions).
type limiterOptions struct {
	Enabled               bool            `json:"enabled" yaml:"enabled"`
	InitialUnitsPerMinute float64         `json:"initial_units_per_minute" yaml:"initial_units_per_minute"`
	MinUnitsPerMinute     float64         `json:"min_units_per_minute" yaml:"min_units_per_minute"`
	MaxUnitsPerMinute     float64         `json:"max_units_per_minute" yaml:"max_units_per_minute"`
	Burst                 limiterDuration `json:"burst" yaml:"burst"`
	QueueLimit            int             `json:"queue_limit" yaml:"queue_limit"`
	MaxWait               limiterDuration `json:"max_wait" yaml:"max_wait"`
	DecreaseCooldown      limiterDuration `json:"decrease_cooldown" yaml:"decrease_cooldown"`
	MaxPause              limiterDuration `json:"max_pause" yaml:"max_pause"`
	Controller            string          `json:"controller" yaml:"controller"`
	AIMD                  aimdOptions     `json:"aimd" yaml:"aimd"`
	CUBIC                 cubicOptions    `json:"cubic" yaml:"cubic"`
	Instances             int             `json:"instances" yaml:"instances"`
	Share                 shareConfig     `json:"-" yaml:"share"` // config file only; see cluster.go
}

type aimdOptions struct {
	DecreaseFactor   float64         `json:"decrease_factor" yaml:"decrease_factor"`
	IncreaseStep     float64         `json:"increase_step" yaml:"increase_step"`
	IncreaseInterval limiterDuration `json:"increase_interval" yaml:"increase_interval"`
}

type cubicOptions struct {
	Beta          float64 `json:"beta" yaml:"beta"`
	ScaleConstant float64 `json:"scale_constant" yaml:"scale_constant"`
}

// defaultLimiterOptions returns limiter.DefaultConfig in config-file form.
func defaultLimiterOptions() limiterOptions {
	c := limiter.DefaultConfig()
	return limiterOptions{
		Enabled:               !c.Disabled,
		InitialUnitsPerMinute: c.InitialUnitsPerMinute,
		MinUnitsPerMinute:     c.MinUnitsPerMinute,
		MaxUnitsPerMinute:     c.MaxUnitsPerMinute,
		Burst:                 limiterDuration(c.Burst),
		QueueLimit:            c.QueueLimit,
		MaxWait:               limiterDuration(c.MaxWait),
		DecreaseCooldown:      limiterDuration(c.DecreaseCooldown),
		MaxPause:              limiterDuration(c.MaxPause),
		Controller:            c.Controller,
		AIMD: aimdOptions{
			DecreaseFactor:   c.AIMD.DecreaseFactor,
			IncreaseStep:     c.AIMD.IncreaseStep,
			IncreaseInterval: limiterDuration(c.AIMD.IncreaseInterval),
		},
		CUBIC: cubicOptions{
			Beta:          c.CUBIC.Beta,
			ScaleConstant: c.CUBIC.ScaleConstant,
		},
		Instances: c.Instances,
		Share:     defaultShareConfig(),
	}
}

// config converts the options to a validated limiter.Config. Errors name
// the option as spelled in the file ("limiter: burst: must be >= 0, got -1s").
func (o limiterOptions) config() (limiter.Config, error) {
	c := limiter.Config{
		Disabled:              !o.Enabled,
		InitialUnitsPerMinute: o.InitialUnitsPerMinute,
		MinUnitsPerMinute:     o.MinUnitsPerMinute,
		MaxUnitsPerMinute:     o.MaxUnitsPerMinute,
		Burst:                 time.Duration(o.Burst),
		QueueLimit:            o.QueueLimit,
		MaxWait:               time.Duration(o.MaxWait),
		DecreaseCooldown:      time.Duration(o.DecreaseCooldown),
		MaxPause:              time.Duration(o.MaxPause),
		Controller:            o.Controller,
		AIMD: limiter.AIMDConfig{
			DecreaseFactor:   o.AIMD.DecreaseFactor,
			IncreaseStep:     o.AIMD.IncreaseStep,
			IncreaseInterval: time.Duration(o.AIMD.IncreaseInterval),
		},
		CUBIC: limiter.CUBICConfig{
			Beta:          o.CUBIC.Beta,
			ScaleConstant: o.CUBIC.ScaleConstant,
		},
		Instances: o.Instances,
	}
	if err := c.Validate(); err != nil {
		return limiter.Config{}, err
	}
	return c, nil
}

// decodeLimiterOptionsJSON decodes a trace's "options" object strictly:
// unknown names are an error. Missing options keep their defaults.
func decodeLimiterOptionsJSON(raw []byte) (limiter.Config, error) {
	o := defaultLimiterOptions()
	if err := decodeStrictJSON("", raw, reflect.ValueOf(&o).Elem()); err != nil {
		return limiter.Config{}, fmt.Errorf("options: %w", err)
	}
	return o.config()
}

// decodeStrictJSON decodes a JSON object into the struct v field by field,
// by json tag: an unknown key is an error, a missing or null key keeps the
// field's value, and errors name the key's path ("aimd.increase_step").
func decodeStrictJSON(path string, raw []byte, v reflect.Value) error {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		if path == "" {
			return errors.New("must be an object")
		}
		return fmt.Errorf("%s: must be an object", path)
	}
	fields := map[string]int{}
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		fields[name] = i
	}
	keys := slices.Sorted(maps.Keys(m))
	for _, k := range keys {
		p := k
		if path != "" {
			p = path + "." + k
		}
		i, ok := fields[k]
		if !ok {
			return fmt.Errorf("unknown option %q", p)
		}
		f := v.Field(i)
		if f.Kind() == reflect.Struct {
			if err := decodeStrictJSON(p, m[k], f); err != nil {
				return err
			}
			continue
		}
		if bytes.Equal(bytes.TrimSpace(m[k]), []byte("null")) {
			continue
		}
		if err := json.Unmarshal(m[k], f.Addr().Interface()); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return fmt.Errorf("%s: must be %s, got %s", p, jsonKind(te.Type), m[k])
			}
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

// jsonKind names what a JSON value for a Go type must look like.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64, reflect.Uint32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	}
	return "a " + t.String()
}

// limiterDuration is a time.Duration written as a Go duration string
// ("10s", "1m30s") in JSON and YAML.
type limiterDuration time.Duration

func (d limiterDuration) String() string { return time.Duration(d).String() }

func (d limiterDuration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

func (d *limiterDuration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf(`must be a duration string such as "10s", got %s`, b)
	}
	return d.parse(s)
}

func (d limiterDuration) MarshalYAML() (any, error) { return d.String(), nil }

func (d *limiterDuration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil || n.Kind != yaml.ScalarNode {
		return fmt.Errorf(`line %d: must be a duration such as "10s"`, n.Line)
	}
	return d.parse(s)
}

func (d *limiterDuration) parse(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf(`must be a duration such as "10s", got %q`, s)
	}
	*d = limiterDuration(v)
	return nil
}
