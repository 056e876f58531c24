package gcppubsub

import (
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/api/option"

	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/sources/sourcetest"
)

// The conformance suite runs against pstest in every `go test`, and against
// the real emulator when PUBSUB_EMULATOR_HOST is set, each twice:
//
//   - with a dead-letter policy on the subscription, so that DeliveryCount is
//     Pub/Sub's own delivery attempt: every case runs;
//   - without one, so that DeliveryCount is the in-process count: every case
//     runs but ClosedConsumerRedelivered, which asks a second consumer to see
//     a count of 2 for a message it receives for the first time. Only Pub/Sub
//     can know that, and it tells only subscriptions with a policy.

const conformanceAttempts = 100 // Pub/Sub's maximum: the policy never fires in the suite

var perProcessCountSkip = "without a dead-letter policy DeliveryCount is counted per process, " +
	"so a second consumer sees a redelivered message's count restart at 1 (documented in docs/pubsub.md); " +
	"the case runs in the DeadLetterPolicy variant"

func TestConformancePstest(t *testing.T) {
	for _, policy := range []bool{true, false} {
		t.Run(variant(policy), func(t *testing.T) {
			t.Parallel() // the cases mostly wait on real time
			sourcetest.Run(t, func(t *testing.T, opts sourcetest.Options) sourcetest.Queue {
				f := newFakeRealClock(t)
				return queue(t, opts, policy, f.opts()...)
			})
		})
	}
}

// TestConformanceEmulator runs the suite against the emulator at
// PUBSUB_EMULATOR_HOST, on unique names that are deleted afterwards.
func TestConformanceEmulator(t *testing.T) {
	if os.Getenv("PUBSUB_EMULATOR_HOST") == "" {
		t.Skip("PUBSUB_EMULATOR_HOST is not set; start one with scripts/pubsub-emulator.sh")
	}
	for _, policy := range []bool{true, false} {
		t.Run(variant(policy), func(t *testing.T) {
			t.Parallel() // the cases mostly wait on real time
			sourcetest.Run(t, func(t *testing.T, opts sourcetest.Options) sourcetest.Queue {
				return queue(t, opts, policy)
			})
		})
	}
}

func variant(policy bool) string {
	if policy {
		return "DeadLetterPolicy"
	}
	return "NoPolicy"
}

// queue makes a fresh subscription on a fresh topic; every consumer opened
// on it runs Setup, which creates the resources the first time.
func queue(t *testing.T, opts sourcetest.Options, policy bool, clientOpts ...option.ClientOption) sourcetest.Queue {
	if !policy && strings.Contains(t.Name(), "ClosedConsumerRedelivered") {
		t.Skip(perProcessCountSkip)
	}
	n := uniqueName(t)
	cfg := Config{
		Project:         testProject,
		Subscription:    n,
		Topic:           n,
		DeadLetterTopic: n + "-dead",
		AckDeadline:     opts.AckWait.Round(time.Second),
		PollInterval:    time.Second,
		Setup:           true,
		ClientOptions:   clientOpts,
		Logger:          testLogger(t),
	}
	if cfg.AckDeadline < opts.AckWait {
		cfg.AckDeadline += time.Second
	}
	if policy {
		cfg.MaxDeliveryAttempts = conformanceAttempts
	}
	admin := adminClient(t, clientOpts...)
	t.Cleanup(func() { deleteAll(t, admin, cfg) })
	return sourcetest.Queue{
		AckWait: cfg.AckDeadline,
		Open: func(t *testing.T) sources.Source {
			s, err := Open(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
}
