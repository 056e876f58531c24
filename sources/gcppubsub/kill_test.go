package gcppubsub

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/sources/sourcetest"
)

// The kill test (sourcetest.StartHolder): a consumer process (this test
// binary, re-executed) holds 50 unacked messages and is killed with
// SIGKILL; a second consumer then receives all 50 once their ack deadline
// has passed.

const killHelperEnv = "SLUICE_PUBSUB_KILL_HELPER"

// TestKillHelperProcess is the consumer that gets killed. It opens the
// subscription named in its environment ("addr subscription ackwait n";
// addr "-" means PUBSUB_EMULATOR_HOST) and holds n messages until killed.
func TestKillHelperProcess(t *testing.T) {
	spec := os.Getenv(killHelperEnv)
	if spec == "" {
		t.Skip("helper process for TestKilledConsumer")
	}
	f := strings.Fields(spec)
	ackWait, _ := time.ParseDuration(f[2])
	n, _ := strconv.Atoi(f[3])
	addr := f[0]
	if addr == "-" {
		addr = ""
	}
	opts := clientOptions(addr)
	sourcetest.HoldUntilKilled(func() (sources.Source, error) {
		return Open(context.Background(), Config{Project: testProject, Subscription: f[1], AckDeadline: ackWait,
			PollInterval: time.Second, ClientOptions: opts})
	}, n)
}

func TestKilledConsumer(t *testing.T) {
	for name, server := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			addr := server(t)
			opts := clientOptions(addr)
			if addr == "" {
				addr = "-"
			}
			n := uniqueName(t)
			cfg := Config{
				Project: testProject, Subscription: n, Topic: n, DeadLetterTopic: n + "-dead",
				AckDeadline: 2 * time.Second, PollInterval: time.Second, Setup: true,
				MaxDeliveryAttempts: MaxDeliveryAttempts, // Pub/Sub counts deliveries across processes
				ClientOptions:       opts, Logger: testLogger(t),
			}
			admin := adminClient(t, opts...)
			t.Cleanup(func() { deleteAll(t, admin, cfg) })
			pub := open(t, cfg)
			const count = 50
			for i := range count {
				publish(t, pub, fmt.Sprintf("k-%02d", i), "x")
			}

			cmd := exec.Command(os.Args[0], "-test.run=^TestKillHelperProcess$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %s %d", killHelperEnv, addr, n, cfg.AckDeadline, count))
			kill := sourcetest.StartHolder(t, cmd, count)
			killedAt := time.Now()
			kill()

			got := sourcetest.ReceiveRedelivered(t, pub, count, cfg.AckDeadline+60*time.Second)
			for id, times := range got {
				if times > 1 {
					t.Errorf("%s received %d times", id, times)
				}
			}
			t.Logf("all %d received by the second consumer %v after the kill (ack deadline %v)",
				count, time.Since(killedAt).Round(100*time.Millisecond), cfg.AckDeadline)
		})
	}
}
