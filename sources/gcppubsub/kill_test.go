package gcppubsub

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/sources"
)

// The kill test: a consumer process (this test binary, re-executed) holds
// 50 unacked messages and is killed with SIGKILL; a second consumer then
// receives all 50 once their ack deadline has passed.

const killHelperEnv = "SLUICE_PUBSUB_KILL_HELPER"

// TestKillHelperProcess is the consumer that gets killed. It opens the
// subscription named in its environment ("addr subscription ackwait n";
// addr "-" means PUBSUB_EMULATOR_HOST), receives n messages without
// settling them, prints "held N" and waits to be killed.
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
	s, err := Open(context.Background(), Config{Project: testProject, Subscription: f[1], AckDeadline: ackWait,
		PollInterval: time.Second, ClientOptions: opts})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	var held []sources.Message
	deadline := time.Now().Add(60 * time.Second)
	for len(held) < n && time.Now().Before(deadline) {
		msgs, err := s.Receive(context.Background(), n-len(held))
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		held = append(held, msgs...)
	}
	fmt.Println("held", len(held))
	select {} // until killed
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
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line := make(chan string, 1)
			go func() {
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					if strings.HasPrefix(sc.Text(), "held ") || strings.HasPrefix(sc.Text(), "error ") {
						line <- sc.Text()
						return
					}
				}
				line <- "helper exited"
			}()
			select {
			case l := <-line:
				if l != fmt.Sprintf("held %d", count) {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
					t.Fatalf("helper: %s", l)
				}
			case <-time.After(90 * time.Second):
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatal("helper did not report")
			}
			killedAt := time.Now()
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()

			got := map[string]bool{}
			deadline := time.Now().Add(cfg.AckDeadline + 60*time.Second)
			for len(got) < count && time.Now().Before(deadline) {
				msgs, err := pub.Receive(t.Context(), count)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range msgs {
					if m.DeliveryCount() < 2 {
						t.Errorf("%s: DeliveryCount %d, want >= 2", m.ID(), m.DeliveryCount())
					}
					if got[m.ID()] {
						t.Errorf("%s received twice", m.ID())
					}
					got[m.ID()] = true
					if err := m.Ack(t.Context()); err != nil {
						t.Fatal(err)
					}
				}
			}
			if len(got) != count {
				t.Fatalf("second consumer received %d of the %d messages the killed one held", len(got), count)
			}
			t.Logf("all %d received by the second consumer %v after the kill (ack deadline %v)",
				count, time.Since(killedAt).Round(100*time.Millisecond), cfg.AckDeadline)
		})
	}
}
