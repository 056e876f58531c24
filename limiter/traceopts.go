package limiter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// DecodeTraceOptions decodes the "options" object of a trace into a Config.
// Names are those of the config file's limiter section:
//
//	enabled, initial_units_per_minute, min_units_per_minute,
//	max_units_per_minute, burst, queue_limit, max_wait, decrease_cooldown,
//	max_pause, controller, instances,
//	aimd: {decrease_factor, increase_step, increase_interval},
//	cubic: {beta, scale_constant}
//
// Durations are Go duration strings ("10s", "1m30s"). A missing or null
// option keeps its default; an unknown name is an error. The result is
// validated.
func DecodeTraceOptions(raw []byte) (Config, error) {
	cfg := DefaultConfig()
	err := decodeObject("options", raw, func(key, path string, v json.RawMessage) error {
		switch key {
		case "enabled":
			var on bool
			if err := decodeValue(path, v, &on); err != nil {
				return err
			}
			cfg.Disabled = !on
			return nil
		case "initial_units_per_minute":
			return decodeValue(path, v, &cfg.InitialUnitsPerMinute)
		case "min_units_per_minute":
			return decodeValue(path, v, &cfg.MinUnitsPerMinute)
		case "max_units_per_minute":
			return decodeValue(path, v, &cfg.MaxUnitsPerMinute)
		case "burst":
			return decodeDuration(path, v, &cfg.Burst)
		case "queue_limit":
			return decodeValue(path, v, &cfg.QueueLimit)
		case "max_wait":
			return decodeDuration(path, v, &cfg.MaxWait)
		case "decrease_cooldown":
			return decodeDuration(path, v, &cfg.DecreaseCooldown)
		case "max_pause":
			return decodeDuration(path, v, &cfg.MaxPause)
		case "controller":
			return decodeValue(path, v, &cfg.Controller)
		case "instances":
			return decodeValue(path, v, &cfg.Instances)
		case "aimd":
			return decodeObject(path, v, func(key, path string, v json.RawMessage) error {
				switch key {
				case "decrease_factor":
					return decodeValue(path, v, &cfg.AIMD.DecreaseFactor)
				case "increase_step":
					return decodeValue(path, v, &cfg.AIMD.IncreaseStep)
				case "increase_interval":
					return decodeDuration(path, v, &cfg.AIMD.IncreaseInterval)
				}
				return fmt.Errorf("%s: unknown option", path)
			})
		case "cubic":
			return decodeObject(path, v, func(key, path string, v json.RawMessage) error {
				switch key {
				case "beta":
					return decodeValue(path, v, &cfg.CUBIC.Beta)
				case "scale_constant":
					return decodeValue(path, v, &cfg.CUBIC.ScaleConstant)
				}
				return fmt.Errorf("%s: unknown option", path)
			})
		}
		return fmt.Errorf("%s: unknown option", path)
	})
	if err != nil {
		return Config{}, err
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// decodeObject calls field for each key of a JSON object, in sorted order,
// skipping null values.
func decodeObject(path string, raw []byte, field func(key, path string, v json.RawMessage) error) error {
	if isNull(raw) {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("%s: must be an object", path)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if isNull(m[k]) {
			continue
		}
		p := k
		if path != "options" {
			p = path + "." + k
		}
		if err := field(k, p, m[k]); err != nil {
			return err
		}
	}
	return nil
}

func isNull(raw []byte) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

func decodeValue[T any](path string, raw []byte, dst *T) error {
	if err := json.Unmarshal(raw, dst); err != nil {
		return fmt.Errorf("%s: must be a %T, got %s", path, *dst, raw)
	}
	return nil
}

func decodeDuration(path string, raw []byte, dst *time.Duration) error {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf(`%s: must be a duration string such as "10s", got %s`, path, raw)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf(`%s: must be a duration such as "10s", got %q`, path, s)
	}
	*dst = d
	return nil
}
