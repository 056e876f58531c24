package gcppubsub

import (
	"os"
	"testing"
	"time"

	"google.golang.org/api/option"
)

// backends are the servers a test runs against: pstest always, the
// emulator at PUBSUB_EMULATOR_HOST when it is set. Each starts (pstest) or
// names (the emulator) a server and returns its address, "" for the
// emulator, which the client finds through the environment.
func backends(t *testing.T) map[string]func(t *testing.T) string {
	b := map[string]func(t *testing.T) string{
		"pstest": func(t *testing.T) string { return newFakeRealClock(t).srv.Addr },
	}
	if os.Getenv("PUBSUB_EMULATOR_HOST") != "" {
		b["emulator"] = func(t *testing.T) string { return "" }
	} else {
		t.Log("PUBSUB_EMULATOR_HOST is not set: pstest only")
	}
	return b
}

// clientOptions reach the server at addr ("" for PUBSUB_EMULATOR_HOST).
func clientOptions(addr string) []option.ClientOption {
	if addr == "" {
		return nil
	}
	return emulatorOptions(addr)
}

// TestDeadLetterPaths shows both ways to the dead-letter topic on a
// subscription with a dead-letter policy: Term writes sluice's record (with
// the reason) and acks; a message nakked max_delivery_attempts times is
// forwarded by Pub/Sub itself, without a reason.
func TestDeadLetterPaths(t *testing.T) {
	for name, server := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			opts := clientOptions(server(t))
			n := uniqueName(t)
			cfg := Config{
				Project:             testProject,
				Subscription:        n,
				Topic:               n,
				DeadLetterTopic:     n + "-dead",
				AckDeadline:         10 * time.Second,
				PollInterval:        testPoll, // a lost pull would count a delivery
				Setup:               true,
				MaxDeliveryAttempts: MinDeliveryAttempts,
				ClientOptions:       opts,
				Logger:              testLogger(t),
			}
			// A reader of the dead-letter topic, subscribed before anything
			// is dead-lettered.
			readerCfg := cfg
			readerCfg.Subscription = n + "-dead-reader"
			readerCfg.Topic = cfg.DeadLetterTopic
			readerCfg.DeadLetterTopic = ""
			readerCfg.MaxDeliveryAttempts = 0
			admin := adminClient(t, opts...)
			t.Cleanup(func() {
				deleteAll(t, admin, cfg)
				deleteAll(t, admin, Config{Project: testProject, Subscription: readerCfg.Subscription})
			})
			reader := open(t, readerCfg)
			s := open(t, cfg)

			publish(t, s, "term", "t")
			publish(t, s, "poison", "p")
			deliveries := 0
			for termed := false; !termed || deliveries < MinDeliveryAttempts; {
				for _, m := range receiveUntil(t, s, 2) {
					switch m.ID() {
					case "term":
						if err := m.Term(t.Context(), "bad request"); err != nil {
							t.Fatal(err)
						}
						termed = true
					case "poison":
						deliveries++
						if m.DeliveryCount() != deliveries {
							t.Errorf("poison delivery %d has DeliveryCount %d", deliveries, m.DeliveryCount())
						}
						if err := m.Nak(t.Context(), 0); err != nil {
							t.Fatal(err)
						}
					}
				}
			}

			// Pub/Sub forwards a message when it would deliver it once
			// more (the emulator only on a pull): neither comes back here.
			receiveNone(t, s)

			got := map[string]map[string]string{}
			for len(got) < 2 {
				for _, m := range receiveUntil(t, reader, 2) {
					got[m.ID()] = m.Headers()
					t.Logf("dead-letter topic holds %q (data %q) with attributes %v", m.ID(), m.Data(), m.Headers())
					if err := m.Ack(t.Context()); err != nil {
						t.Fatal(err)
					}
				}
			}
			if r := got["term"]; r[ReasonAttribute] != "bad request" || r[DeliveryCountAttribute] != "1" {
				t.Errorf("term record attributes %v, want reason and delivery count 1", r)
			}
			if r := got["poison"]; r == nil {
				t.Error("poison message not forwarded by the dead-letter policy")
			} else if _, ok := r[ReasonAttribute]; ok {
				t.Errorf("forwarded message has a sluice reason: %v", r)
			}
		})
	}
}
