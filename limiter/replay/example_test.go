package replay_test

import (
	"os"
	"strings"
	"time"

	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/limiter/replay"
)

// Replay a trace in virtual time, as `sluice limiter replay` does. The
// command's Decode reads the options with the config file's names; this
// one sets the classic rules, a burst of one second and a full bucket.
func ExampleReplayer() {
	trace := `{"options": {"burst": "1s", "initial_fill": 1}}
{"at": 0, "op": "acquire", "id": "a", "units": 10}
{"at": 0, "op": "acquire", "id": "b", "units": 2}
{"at": 1, "op": "throttle", "id": "a", "retry_after": 4}
`
	r := replay.Replayer{Decode: func([]byte) (limiter.Config, error) {
		cfg := limiter.DefaultConfig()
		cfg.Burst, cfg.InitialFill, cfg.SlowStart = time.Second, 1, false
		return cfg, cfg.Validate()
	}}
	if err := r.Run(strings.NewReader(trace), os.Stdout); err != nil {
		panic(err)
	}
	// Output:
	// {"at": 0, "op": "acquire", "rate": 600, "tokens": 0, "queue": 0, "paused_until": null, "granted": [{"id": "a", "at": 0}], "rejected": []}
	// {"at": 0, "op": "acquire", "rate": 600, "tokens": 0, "queue": 1, "paused_until": null, "granted": [], "rejected": []}
	// {"at": 1, "op": "throttle", "rate": 420, "tokens": 7, "queue": 0, "paused_until": 5, "granted": [{"id": "b", "at": 0.2}], "rejected": []}
}
