package config

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/limiter/replay"
)

// TestLimiterOptionsMatchTraceOptions checks that the config file's limiter
// section and a trace's options line are one schema: the same text, written
// as YAML in the file and as JSON in the trace, decodes to the same
// limiter.Config, and the problems are named alike.
func TestLimiterOptionsMatchTraceOptions(t *testing.T) {
	raw := `{"enabled": false, "initial_units_per_minute": 900, "min_units_per_minute": 30,
		"max_units_per_minute": 5000, "burst": "2s", "queue_limit": 7, "max_wait": "1m",
		"decrease_cooldown": "3s", "max_pause": "0s", "controller": "cubic",
		"aimd": {"decrease_factor": 0.5, "increase_step": 60, "increase_interval": "4s"},
		"cubic": {"beta": 0.8, "scale_constant": 2.5}, "instances": 3}`
	cfg, err := Parse([]byte(minimalConfig+"limiter: "+strings.ReplaceAll(raw, "\n", " ")+"\n"), Options{Lookup: envOf(nil)})
	if err != nil {
		t.Fatal(err)
	}
	want, err := replay.DecodeOptions([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Limiter.Config != want {
		t.Errorf("config file options %+v\ntrace options %+v", cfg.Limiter.Config, want)
	}
	if want.MaxWait != time.Minute || !want.Disabled || want.CUBIC.ScaleConstant != 2.5 || want.Instances != 3 {
		t.Errorf("decoded %+v", want)
	}
	def, err := replay.DecodeOptions([]byte(`{}`))
	if err != nil || def != limiter.DefaultConfig() {
		t.Errorf("empty options = %+v, %v; want the defaults", def, err)
	}

	for _, bad := range []struct{ json, yaml, want string }{
		{`{"aimd": {"step": 1}}`, "limiter: {aimd: {step: 1}}", `aimd.step: unknown key`},
		{`{"max_wait": 5}`, "limiter: {max_wait: 5}", `max_wait: must be a duration such as "10s" or "1m30s", got "5"`},
		{`{"queue_limit": "x"}`, "limiter: {queue_limit: x}", `queue_limit: must be an integer, got "x"`},
		{`{"burst": "-1s"}`, "limiter: {burst: -1s}", `burst: must be >= 0, got -1s`},
		{`{"share": {}}`, "", `share: unknown key`},
	} {
		_, terr := replay.DecodeOptions([]byte(bad.json))
		if terr == nil || !strings.Contains(terr.Error(), bad.want) {
			t.Errorf("trace options %s: %v, want %q", bad.json, terr, bad.want)
		}
		if bad.yaml == "" {
			continue // the file's limiter section has a share; a trace has not
		}
		_, ferr := Parse([]byte(minimalConfig+bad.yaml+"\n"), Options{Lookup: envOf(nil)})
		if ferr == nil || !strings.Contains(ferr.Error(), "limiter."+bad.want) {
			t.Errorf("config %s: %v, want %q", bad.yaml, ferr, "limiter."+bad.want)
		}
	}
}
