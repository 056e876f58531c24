package replay

import (
	"errors"

	"github.com/sluicehq/sluice/field"
	"github.com/sluicehq/sluice/internal/schema"
	"github.com/sluicehq/sluice/limiter"
)

// DecodeOptions decodes the "options" object of a trace into a
// limiter.Config with the decoder of the config file's limiter section; it
// is the Decode of `sluice limiter replay`. The names are the yaml tags of
// limiter.Config ("burst", "aimd.increase_step", "enabled"), durations are
// Go duration strings ("10s", "1m30s"), a missing or null option keeps its
// default, and an unknown name is an error. The result is validated; every
// problem is reported, each as a *field.Error.
func DecodeOptions(raw []byte) (limiter.Config, error) {
	n, err := schema.FromJSON(raw, 0)
	if err != nil {
		return limiter.Config{}, err
	}
	if n.Kind != schema.Map && n.Kind != schema.Null {
		return limiter.Config{}, errors.New("must be an object")
	}
	cfg := limiter.DefaultConfig()
	if err := errors.Join(schema.Decode("", n, &cfg, nil), cfg.Validate()); err != nil {
		return limiter.Config{}, field.Under("", err)
	}
	return cfg, nil
}
