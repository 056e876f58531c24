package worker

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	bad := map[string]Config{
		"max_in_flight":  {MaxInFlight: -1},
		"max_attempts":   {MaxAttempts: -2},
		"backoff.cap":    {BackoffBase: 10 * time.Second, BackoffCap: time.Second},
		"ack_wait":       {AckWait: -time.Second},
		"result_headers": {ResultHeaders: []string{"X Bad"}},
		"jobs.envelope":  {Jobs: JobsConfig{Envelope: "xml"}},
	}
	for field, c := range bad {
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("Validate(%+v) = %v, want an error naming %s", c, err, field)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("the zero Config: %v", err)
	}
	if _, err := New(Config{}, Deps{}); err == nil {
		t.Errorf("New without a source and a target succeeded")
	}
}
