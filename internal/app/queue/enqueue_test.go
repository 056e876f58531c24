package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/sources/memory"
)

func TestCheckEnvelope(t *testing.T) {
	for _, c := range []struct {
		line, id, err string
	}{
		{line: `{"id":"a1","type":"t","cost":2.5}`, id: "a1"},
		{line: `{"id":"a1","cost":0}`, id: "a1"},
		{line: `{}`, id: "sha256-44136fa355b3678a1146ad16f7e8649e"},
		{line: `{ }`, id: "sha256-44136fa355b3678a1146ad16f7e8649e"},
		{line: `[1,2]`, err: "not a JSON object"},
		{line: `"x"`, err: "not a JSON object"},
		{line: `{"id":`, err: "invalid JSON"},
		{line: `{"a":1} {"b":2}`, err: "invalid JSON"},
		{line: `{"id":7}`, err: `"id" must be a string, got 7`},
		{line: `{"id":null}`, err: `"id" must be a string`},
		{line: `{"id":" "}`, err: `"id" must not be empty`},
		{line: `{"cost":-1}`, err: `"cost" must be >= 0, got -1`},
		{line: `{"cost":"3"}`, err: `"cost" must be a number`},
	} {
		id, err := CheckEnvelope([]byte(c.line))
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.line, err, c.err)
			}
		case err != nil:
			t.Errorf("%s: %v", c.line, err)
		case id != c.id:
			t.Errorf("%s: id %q, want %q", c.line, id, c.id)
		}
	}
	a, _ := CheckEnvelope([]byte(`{"path":"/a"}`))
	b, _ := CheckEnvelope([]byte(`{"path":"/b"}`))
	if a == b {
		t.Error("different jobs without id got the same id")
	}
}

func TestEnqueueMemory(t *testing.T) {
	src, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	in := strings.Join([]string{
		`{"id":"j1","path":"/a"}`,
		`not json`,
		``,
		`{"path":"/b"}`,
		`{"id":3}`,
		`  {"id":"j4"}  `,
	}, "\n")
	for run := 1; run <= 2; run++ {
		var errw bytes.Buffer
		res, err := Enqueue(t.Context(), src, strings.NewReader(in), "jobs.jsonl", &errw)
		if err != nil {
			t.Fatal(err)
		}
		if res.Published != 3 || res.Bad != 2 {
			t.Errorf("run %d: %+v, want 3 published and 2 bad", run, res)
		}
		want := "jobs.jsonl:2: not a JSON object; line skipped\njobs.jsonl:5: \"id\" must be a string, got 3; line skipped\n"
		if errw.String() != want {
			t.Errorf("run %d: reported\n%s\nwant\n%s", run, errw.String(), want)
		}
		if n := src.Queue().Len(); n != 3 {
			t.Errorf("run %d: queue holds %d, want 3", run, n)
		}
	}
}

// TestEnqueueStatusEmbedded runs the commands' cores against the embedded
// server, each run starting and stopping its own on one store directory.
func TestEnqueueStatusEmbedded(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default().Source
	cfg.JetStream.Embedded.StoreDir = filepath.Join(dir, "data")
	cfg.JetStream.Embedded.Port = -1
	var jobs strings.Builder
	for i := range 200 {
		if i%2 == 0 {
			fmt.Fprintf(&jobs, `{"id":"job-%d","path":"/items/%d"}`+"\n", i, i)
		} else {
			fmt.Fprintf(&jobs, `{"path":"/items/%d"}`+"\n", i)
		}
	}
	jobs.WriteString("{oops\n")
	file := filepath.Join(dir, "jobs.jsonl")
	if err := os.WriteFile(file, []byte(jobs.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for run, dups := range []int{0, 200} {
		var out, errw bytes.Buffer
		res, err := EnqueueFile(t.Context(), cfg, file, nil, &out, &errw)
		if err != nil || res.Bad != 1 {
			t.Fatalf("run %d: %v, %+v, want one bad line", run+1, err, res)
		}
		want := fmt.Sprintf("enqueue: 200 jobs published (%d already queued), 1 bad lines, from %s\n", dups, file)
		if out.String() != want {
			t.Errorf("run %d: printed %q, want %q", run+1, out.String(), want)
		}
		if !strings.Contains(errw.String(), "jobs.jsonl:201: invalid JSON") {
			t.Errorf("run %d: stderr %q does not report line 201", run+1, errw.String())
		}
	}
	var out bytes.Buffer
	if err := statusOnce(t.Context(), cfg, true, &out, &out); err != nil {
		t.Fatal(err)
	}
	var st StatusReport
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatalf("status --json printed %q: %v", out.String(), err)
	}
	if st.Pending != 200 || st.AckPending != 0 || st.DeadLetters == nil || *st.DeadLetters != 0 {
		t.Errorf("status: %s", out.String())
	}
	out.Reset()
	if err := statusOnce(t.Context(), cfg, false, &out, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "backlog (pending)               200") {
		t.Errorf("status table:\n%s", out.String())
	}
}

func TestStatusPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cfg := config.Default().Source
	cfg.JetStream.Embedded.StoreDir = t.TempDir()
	cfg.JetStream.Embedded.Port = l.Addr().(*net.TCPAddr).Port
	err = statusOnce(t.Context(), cfg, false, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil {
		t.Fatal("status started a server on a port in use")
	}
	for _, want := range []string{"source.jetstream.embedded.port", "--nats-port", strconv.Itoa(cfg.JetStream.Embedded.Port)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

// statusOnce is `sluice status` (--json when asJSON) on the source cfg.
func statusOnce(ctx context.Context, cfg config.Source, asJSON bool, stdout, stderr io.Writer) error {
	c := config.Default()
	c.Source = cfg
	c.Metrics.Listen = config.OpsListenOff // no worker of this machine answers
	return Status(ctx, c, StatusOptions{JSON: asJSON, Interval: 2 * time.Second}, stdout, stderr)
}
