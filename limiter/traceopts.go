package limiter

import (
	"errors"

	"github.com/sluicehq/sluice/field"
	"github.com/sluicehq/sluice/internal/schema"
)

// DecodeTraceOptions decodes the "options" object of a trace into a Config,
// with the decoder of the config file's limiter section: the names are the
// yaml tags of Config ("burst", "aimd.increase_step", "enabled"), durations
// are Go duration strings ("10s", "1m30s"), a missing or null option keeps
// its default, and an unknown name is an error. The result is validated;
// every problem is reported, each as a *field.Error.
func DecodeTraceOptions(raw []byte) (Config, error) {
	n, err := schema.FromJSON(raw, 0)
	if err != nil {
		return Config{}, err
	}
	if n.Kind != schema.Map && n.Kind != schema.Null {
		return Config{}, errors.New("must be an object")
	}
	cfg := DefaultConfig()
	if err := errors.Join(schema.Decode("", n, &cfg, nil), cfg.Validate()); err != nil {
		return Config{}, field.Under("", err)
	}
	return cfg, nil
}
