package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/app/cli"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestValidateRejectsWhatRunRejects runs a failure of each library's
// validation (and of the file's own and cross-section rules) through
// `sluice config validate` and through `sluice run`, and checks that both
// print the same problem with its line, and that run stops before it opens
// anything: the source would be an embedded server in a fresh directory,
// and the directory is never made.
func TestValidateRejectsWhatRunRejects(t *testing.T) {
	const target = "target:\n  base_url: http://127.0.0.1:8080\n"
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"limiter", target + "limiter:\n  burst: -1s\n",
			`config: limiter.burst: must be >= 0, got -1s (line 4)`},
		{"limiter type and range in one pass", target + "limiter:\n  queue_limit: lots\n  max_wait: 0s\n",
			`config: limiter.queue_limit: must be an integer, got "lots" (line 4)` + "\n" + `config: limiter.max_wait: must be > 0, got 0s (line 5)`},
		{"worker job path", target + "jobs: {types: {a: {path: \"/a b\"}}}\n",
			`config: jobs.types.a.path: must not hold spaces, control characters or backslashes, got "/a b" (line 3)`},
		{"worker job method", target + "jobs:\n  types:\n    a:\n      method: \"P OST\"\n",
			`config: jobs.types.a.method: must be an HTTP method such as POST, got "P OST" (line 6)`},
		{"worker", target + "worker:\n  max_redelivery_delay: 13h\n",
			`config: worker.max_redelivery_delay: must be <= 12h0m0s, got 13h0m0s (line 4)`},
		{"httpapi target", "target:\n  base_url: http://127.0.0.1:8080/?a=1\n",
			`config: target.base_url: must have no query (put it in the job path), got "http://127.0.0.1:8080/?a=1" (line 2)`},
		{"httpapi classifier", target + "  throttle_statuses: [429, 99]\n",
			`config: target.throttle_statuses[1]: must be an HTTP status in [100, 599], got 99 (line 3)`},
		{"natsjs", target + "source:\n  jetstream:\n    ack_wait: 10ms\n",
			`config: source.jetstream.ack_wait: must be >= 1s, got 10ms (line 5)`},
		{"gcppubsub", target + "source:\n  kind: pubsub\n  pubsub:\n    project: p-123456\n    ack_deadline: 700s\n",
			`config: source.pubsub.ack_deadline: must be between 1s and 10m0s, got 11m40s (line 7)`},
		{"cluster share", target + "limiter:\n  share:\n    mode: leases\n    ttl: 10ms\n",
			`config: limiter.share.ttl: must be >= 1s, got 10ms (line 6)`},
		{"jsonl output", target + "dead_letters:\n  kind: jsonl\n",
			`config: dead_letters.path: required (line 3)`},
		{"natsout output", target + "results:\n  kind: nats\n  subject: \"a.*\"\n",
			`config: results.subject: must be a subject without wildcards or spaces, got "a.*" (line 5)`},
		{"ops", target + "metrics:\n  listen: nowhere\n",
			`config: metrics.listen: must be host:port or "off", got "nowhere" (line 4)`},
		{"cross-section", target + "worker:\n  max_in_flight: 600\n",
			`config: worker.max_in_flight: must be <= limiter.queue_limit (500) so that waiting jobs are not rejected, got 600 (line 4)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			store := filepath.Join(dir, "never-made")
			file := filepath.Join(dir, "sluice.yaml")
			if err := os.WriteFile(file, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := testkit.RunCLI(t.Context(), newRootCmd, "config", "validate", "-c", file)
			var ee *cli.ExitError
			if !errors.As(err, &ee) || ee.Code != 2 {
				t.Fatalf("config validate: %v, want exit status 2; output:\n%s", err, out)
			}
			if got := strings.TrimSpace(out); got != tc.want {
				t.Errorf("config validate printed\n%s\nwant\n%s", got, tc.want)
			}

			args := []string{"run", "-c", file}
			if !strings.Contains(tc.yaml, "kind: pubsub") {
				args = append(args, "--data-dir", store, "--nats-port", "-1")
			}
			_, err = testkit.RunCLI(t.Context(), newRootCmd, args...)
			if !errors.As(err, &ee) || ee.Code != 2 {
				t.Fatalf("run: %v, want exit status 2", err)
			}
			if got := strings.TrimSpace(err.Error()); got != tc.want {
				t.Errorf("run failed with\n%s\nwant\n%s", got, tc.want)
			}
			if _, err := os.Stat(store); !os.IsNotExist(err) {
				t.Errorf("run made the source's store directory before it rejected the config (stat: %v)", err)
			}
		})
	}
}
