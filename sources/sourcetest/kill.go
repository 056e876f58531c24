package sourcetest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/sources"
)

// The kill test runs in two processes: the test binary re-executes itself
// as a helper that holds messages without settling them (HoldUntilKilled),
// kills it with SIGKILL once it holds them (StartHolder), and checks that a
// second consumer receives every one of them after their ack deadline
// (ReceiveRedelivered).

// HoldUntilKilled is the body of the helper process: it opens a source,
// receives n messages without settling them, prints "held N" on stdout and
// blocks until the process is killed. If open or a receive fails it prints
// "error <err>" and exits with status 2; after a minute without n
// messages it reports what it holds.
func HoldUntilKilled(open func() (sources.Source, error), n int) {
	src, err := open()
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	var held []sources.Message
	deadline := time.Now().Add(time.Minute)
	for len(held) < n && time.Now().Before(deadline) {
		msgs, err := src.Receive(context.Background(), n-len(held))
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		held = append(held, msgs...)
	}
	fmt.Println("held", len(held))
	select {} // until killed
}

// StartHolder starts cmd, a re-execution of the test binary whose helper
// calls HoldUntilKilled for n messages, and waits up to 90 s for it to
// report that it holds them; the test fails if it reports anything else.
// It returns a function that kills the helper with SIGKILL and waits for
// it to exit; the helper is also killed when the test ends.
func StartHolder(t *testing.T, cmd *exec.Cmd, n int) (kill func()) {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	kill = func() {
		once.Do(func() {
			if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
				t.Errorf("killing the helper: %v", err)
			}
			_ = cmd.Wait()
		})
	}
	t.Cleanup(kill)
	// The reader ends at the report, or when the helper exits (Wait
	// closes the pipe).
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
		if l != fmt.Sprintf("held %d", n) {
			kill()
			t.Fatalf("helper: %s", l)
		}
	case <-time.After(90 * time.Second):
		kill()
		t.Fatal("helper did not report")
	}
	return kill
}

// ReceiveRedelivered receives and acks messages from src until it has n
// distinct ones, or until within has passed, and returns how many times
// each id arrived. It fails the test if a message is on its first delivery
// or if fewer than n arrive.
func ReceiveRedelivered(t *testing.T, src sources.Source, n int, within time.Duration) map[string]int {
	t.Helper()
	got := map[string]int{}
	deadline := time.Now().Add(within)
	for len(got) < n && time.Now().Before(deadline) {
		msgs, err := src.Receive(t.Context(), n)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if m.DeliveryCount() < 2 {
				t.Errorf("%s: DeliveryCount %d, want >= 2", m.ID(), m.DeliveryCount())
			}
			got[m.ID()]++
			if err := m.Ack(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(got) != n {
		t.Fatalf("second consumer received %d of the %d messages the killed one held", len(got), n)
	}
	return got
}
