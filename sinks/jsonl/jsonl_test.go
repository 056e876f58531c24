package jsonl_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/sinks"
	"github.com/sluicehq/sluice/sinks/jsonl"
)

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

func TestConcurrentPublish(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dead.jsonl")
	o, err := jsonl.New(jsonl.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 32, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				rec := fmt.Sprintf(`{"id":"w%d-%d","pad":"%0300d"}`, w, i, i)
				if err := o.Publish(context.Background(), "k", []byte(rec)); err != nil {
					t.Errorf("Publish: %v", err)
				}
			}
		})
	}
	wg.Wait()
	if err := o.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	lines := readLines(t, path)
	if len(lines) != writers*each {
		t.Fatalf("%d lines; want %d", len(lines), writers*each)
	}
	seen := map[string]bool{}
	for _, l := range lines {
		var rec struct{ ID string }
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		seen[rec.ID] = true
	}
	if len(seen) != writers*each {
		t.Fatalf("%d distinct records; want %d", len(seen), writers*each)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v; want 0600", fi.Mode().Perm())
	}
}

func TestAppendAndClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.jsonl")
	for i := range 2 {
		o, err := jsonl.New(jsonl.Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Publish(context.Background(), "k", []byte(fmt.Sprintf(`{"n":%d}`, i))); err != nil {
			t.Fatal(err)
		}
		if err := o.Publish(context.Background(), "k", []byte("{\"bad\":\n1}")); err == nil {
			t.Error("a record with a newline was accepted")
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := o.Publish(ctx, "k", []byte(`{}`)); !errors.Is(err, context.Canceled) {
			t.Errorf("Publish on a done context = %v", err)
		}
		if err := o.Close(); err != nil {
			t.Fatal(err)
		}
		if err := o.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if err := o.Publish(context.Background(), "k", []byte(`{}`)); !errors.Is(err, sinks.ErrClosed) {
			t.Errorf("Publish after Close = %v; want sinks.ErrClosed", err)
		}
	}
	if got := readLines(t, path); len(got) != 2 || got[0] != `{"n":0}` || got[1] != `{"n":1}` {
		t.Fatalf("lines %q", got)
	}
}

func TestErrors(t *testing.T) {
	if _, err := jsonl.New(jsonl.Config{}); err == nil || err.Error() != "jsonl: path: required" {
		t.Errorf("New with no path: %v", err)
	}
	if _, err := jsonl.New(jsonl.Config{Path: filepath.Join(t.TempDir(), "missing", "x.jsonl")}); err == nil {
		t.Error("New in a missing directory: no error")
	}
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	o, err := jsonl.New(jsonl.Config{Path: "/dev/full"})
	if err != nil {
		t.Skipf("cannot open /dev/full: %v", err)
	}
	defer o.Close()
	if err := o.Publish(context.Background(), "k", []byte(`{}`)); err == nil {
		t.Error("Publish to a full device: no error")
	}
}
