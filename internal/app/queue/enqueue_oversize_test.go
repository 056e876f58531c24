package queue

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/sources/memory"
)

// A line larger than the queue accepts is reported and skipped like any bad
// line; the lines after it are published and the exit status is 1 (#15).
func TestEnqueueOversizedLineEmbedded(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default().Source
	cfg.JetStream.Embedded.StoreDir = filepath.Join(dir, "data")
	cfg.JetStream.Embedded.Port = -1
	big := `{"id":"big","body":"` + strings.Repeat("x", 2<<20) + `"}`
	in := strings.Join([]string{`{"id":"a"}`, big, `{"id":"b"}`, `{"id":"c"}`}, "\n") + "\n"
	file := filepath.Join(dir, "jobs.jsonl")
	if err := os.WriteFile(file, []byte(in), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errw bytes.Buffer
	res, err := EnqueueFile(t.Context(), cfg, file, nil, &out, &errw)
	if err != nil || res.Bad != 1 {
		t.Fatalf("enqueue: %v, %+v, want the oversized line counted bad", err, res)
	}
	want := fmt.Sprintf("enqueue: 3 jobs published (0 already queued), 1 bad lines, from %s\n", file)
	if out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
	if !strings.Contains(errw.String(), "jobs.jsonl:2: ") || !strings.Contains(errw.String(), "message too large") ||
		!strings.Contains(errw.String(), "line skipped") {
		t.Errorf("stderr %q does not report line 2 as too large and skipped", errw.String())
	}
}

func TestEnqueueOversizedLineMemory(t *testing.T) {
	src, err := memory.New(memory.Config{MaxMessageBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	in := `{"id":"a"}` + "\n" + `{"id":"big","body":"` + strings.Repeat("x", 100) + `"}` + "\n" + `{"id":"b"}`
	var errw bytes.Buffer
	res, err := Enqueue(t.Context(), src, strings.NewReader(in), "jobs.jsonl", &errw)
	if err != nil {
		t.Fatal(err)
	}
	if res.Published != 2 || res.Bad != 1 {
		t.Errorf("%+v, want 2 published and 1 bad", res)
	}
	if !strings.HasPrefix(errw.String(), "jobs.jsonl:2: memory: publish: sources: message too large: 122 bytes, the limit is 64; line skipped") {
		t.Errorf("reported %q", errw.String())
	}
	if n := src.Queue().Len(); n != 2 {
		t.Errorf("queue holds %d, want 2", n)
	}
}
