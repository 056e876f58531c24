package config

import (
	"strings"
	"testing"
)

// Counts have upper bounds and a fraction in an integer field is an error,
// not a value truncated to its integer part (#15).
func TestConfigCountBounds(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"fraction in max_in_flight", "worker:\n  max_in_flight: 1.9\n",
			`config: worker.max_in_flight: must be an integer, got "1.9" (line 4)`},
		{"fraction in queue_limit", "limiter:\n  queue_limit: 10.5\n",
			`config: limiter.queue_limit: must be an integer, got "10.5" (line 4)`},
		{"max_in_flight above its bound", "worker:\n  max_in_flight: 9223372036854775807\n",
			`config: worker.max_in_flight: must be <= 10000, got 9223372036854775807 (line 4)`},
		{"max_in_flight of 2^31", "worker:\n  max_in_flight: 2147483648\n",
			`config: worker.max_in_flight: must be <= 10000, got 2147483648 (line 4)`},
		{"max_attempts above its bound", "worker:\n  max_attempts: 1e3\n",
			`config: worker.max_attempts: must be <= 100, got 1000 (line 4)`},
		{"max_deliveries above its bound", "worker:\n  max_deliveries: 5000\n",
			`config: worker.max_deliveries: must be <= 1000, got 5000 (line 4)`},
		{"negative max_deliveries", "worker:\n  max_deliveries: -3\n",
			`config: worker.max_deliveries: must be > 0, got -3 (line 4)`},
		{"queue_limit above its bound", "limiter:\n  queue_limit: 9223372036854775807\n",
			`config: limiter.queue_limit: must be from 0 to 1000000, got 9223372036854775807 (line 4)`},
		{"instances above its bound", "limiter:\n  instances: 2147483648\n",
			`config: limiter.instances: must be from 1 to 10000, got 2147483648 (line 4)`},
		{"max_envelope_bytes above its bound", "jobs:\n  max_envelope_bytes: 1e9\n",
			`config: jobs.max_envelope_bytes: must be <= 67108864, got 1000000000 (line 4)`},
		{"max_response_bytes above its bound", "  max_response_bytes: 1e12\n",
			`config: target.max_response_bytes: must be <= 67108864, got 1000000000000`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(minimalConfig+tt.src), Options{Lookup: envOf(nil)})
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error:\n%v\nwant it to contain:\n%s", err, tt.want)
			}
			if strings.Count(err.Error(), "\n") > 0 && !strings.Contains(tt.name, "max_in_flight") {
				t.Errorf("want one error, got:\n%v", err)
			}
		})
	}
	// Whole numbers written as floats are integers.
	if _, err := Parse([]byte(minimalConfig+"worker:\n  max_in_flight: 64.0\n"), Options{Lookup: envOf(nil)}); err != nil {
		t.Errorf("max_in_flight: 64.0: %v", err)
	}
}

// A type cost that could never be granted within max_wait at
// max_units_per_minute is rejected by config validate (#15).
func TestConfigTypeCostBound(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{"jobs:\n  types:\n    x:\n      cost: 1e308\n",
			`config: jobs.types.x.cost: must be <= the limiter's cost bound 1.6666666666666666e+07 (max_units_per_minute / instances over max_wait), got 1e+308 (line 6)`},
		{"limiter:\n  max_units_per_minute: 600\n  max_wait: 10s\njobs:\n  types:\n    x:\n      cost: 101\n",
			`config: jobs.types.x.cost: must be <= the limiter's cost bound 100 (max_units_per_minute / instances over max_wait), got 101 (line 9)`},
	} {
		_, err := Parse([]byte(minimalConfig+tt.src), Options{Lookup: envOf(nil)})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error:\n%v\nwant it to contain:\n%s", err, tt.want)
		}
	}
	ok := minimalConfig + "limiter:\n  max_units_per_minute: 600\n  max_wait: 10s\njobs:\n  types:\n    x:\n      cost: 100\n"
	if _, err := Parse([]byte(ok), Options{Lookup: envOf(nil)}); err != nil {
		t.Errorf("a cost at the bound: %v", err)
	}
}
