package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/sources/natsjs"
)

// sourceFlags are the connection flags of the commands that talk to the
// queue (enqueue, status). Each flag that is given replaces the matching
// setting of the source config; the others keep its value.
type sourceFlags struct {
	config   string // -c FILE: start from the file's source section
	natsURL  string
	dataDir  string
	natsPort int
	stream   string
	subject  string
}

func (f *sourceFlags) register(cmd *cobra.Command) {
	d := config.Default().Source.JetStream
	fl := cmd.Flags()
	fl.StringVarP(&f.config, "config", "c", "", "config file; its source section is used, and the flags below replace its values")
	fl.StringVar(&f.natsURL, "nats-url", d.URL, `NATS server URL, or "embedded" to use (or start) the embedded server (source.jetstream.url)`)
	fl.StringVar(&f.dataDir, "data-dir", d.Embedded.StoreDir, "embedded server's store directory (source.jetstream.embedded.store_dir)")
	fl.IntVar(&f.natsPort, "nats-port", d.Embedded.Port, "embedded server's port on 127.0.0.1; 0 or -1 for a random free one (source.jetstream.embedded.port)")
	fl.StringVar(&f.stream, "stream", d.Stream, "JetStream stream of the jobs (source.jetstream.stream)")
	fl.StringVar(&f.subject, "subject", d.Subjects[0], "subject the jobs are published on (source.jetstream.publish_subject)")
}

// apply lays the flags that were given over cfg.
// load reads the config file's source section, applies the flags and
// checks the result; every error it returns is a usage or config error
// (exit status 2).
func (f *sourceFlags) load(cmd *cobra.Command) (config.Source, error) {
	cfg, err := loadSourceConfig(f.config)
	if err == nil {
		err = f.apply(cmd, &cfg)
	}
	if err == nil {
		err = cfg.Check()
	}
	return cfg, usageError(err)
}

func (f *sourceFlags) apply(cmd *cobra.Command, cfg *config.Source) error {
	changed := func(name string) bool { return cmd.Flags().Changed(name) }
	given := false
	for _, n := range []string{"nats-url", "data-dir", "nats-port", "stream", "subject"} {
		given = given || changed(n)
	}
	if !given {
		return nil
	}
	if cfg.Kind != config.SourceJetStream {
		return fmt.Errorf("the --nats-* flags, --data-dir, --stream and --subject apply to source.kind %q, not %q", config.SourceJetStream, cfg.Kind)
	}
	js := &cfg.JetStream
	if changed("nats-url") {
		js.URL = f.natsURL
	}
	if changed("data-dir") {
		js.Embedded.StoreDir = f.dataDir
	}
	if changed("nats-port") {
		js.Embedded.Port = f.natsPort
	}
	if changed("stream") {
		js.Stream = f.stream
	}
	if changed("subject") {
		js.PublishSubject = f.subject
		// With the default stream subjects, the subject becomes the
		// stream's; a configured stream must already cover it.
		if len(js.Subjects) == 1 && js.Subjects[0] == natsjs.DefaultSubject {
			js.Subjects = []string{f.subject}
		}
	}
	return nil
}

// commandLogger logs warnings and errors of the queue client to stderr.
func commandLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func newEnqueueCmd() *cobra.Command {
	var f sourceFlags
	cmd := &cobra.Command{
		Use:   "enqueue [flags] FILE|-",
		Short: "Publish job envelopes from a JSON-lines file (or - for stdin) onto the queue",
		Long: `enqueue reads one job envelope per line,
  {"id","type","method","path","headers","body" | "body_base64","cost"}
(every field optional), and publishes each line as one message. A job's id
is its message id, so publishing the same file twice within the queue's
duplicate window enqueues each job once; a line without an id gets one
derived from its content (sha256 of the compacted JSON). A line that is not
a JSON object, or whose id is not a string or whose cost is not a number
>= 0, or that is larger than the queue accepts (a NATS server's max_payload,
Pub/Sub's 10 MB), is reported with its line number and skipped; the lines
after it are published, and the exit status is then 1.

With the embedded server (the default), enqueue uses the server of a
sluice process already running on the same --data-dir, or starts its own
on that directory for the time it runs.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := f.load(cmd)
			if err != nil {
				return err
			}
			return runEnqueue(cmd.Context(), cfg, args[0], cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f.register(cmd)
	return cmd
}

// runEnqueue publishes the jobs of the file at path ("-": stdin) to the
// source cfg describes.
func runEnqueue(ctx context.Context, cfg config.Source, path string, stdin io.Reader, stdout, stderr io.Writer) error {
	if err := cfg.Check(); err != nil {
		return err
	}
	in, size, name := stdin, int64(0), "stdin"
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("enqueue: %w", err)
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
		in, name = f, path
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	src, err := openSource(ctx, cfg, commandLogger(stderr))
	if err != nil {
		return err
	}

	var prog *progress
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		prog = &progress{w: stderr, total: size}
	}
	res, err := enqueue(ctx, src, in, name, prog, stderr)
	fmt.Fprintf(stdout, "enqueue: %d jobs published (%d already queued), %d bad lines, from %s\n",
		res.published, res.duplicates, res.bad, name)
	if cerr := src.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if res.bad > 0 {
		return &exitError{code: 1}
	}
	return nil
}

type enqueueResult struct {
	published  int // publishes acked, duplicates included
	duplicates int // of which the queue already held (when it can tell)
	bad        int // lines skipped
}

// enqueue publishes each good line of r and reports each bad one on
// errw as "name:line: reason".
func enqueue(ctx context.Context, src sources.Source, r io.Reader, name string, prog *progress, errw io.Writer) (enqueueResult, error) {
	var res enqueueResult
	br := bufio.NewReaderSize(r, 1<<20)
	var read int64
	for lineNo := 1; ; lineNo++ {
		line, rerr := br.ReadBytes('\n')
		read += int64(len(line))
		if rerr != nil && rerr != io.EOF {
			return res, fmt.Errorf("enqueue: read %s: %w", name, rerr)
		}
		line = bytes.TrimSpace(line)
		if len(line) > 0 {
			if err := publishLine(ctx, src, line, &res); err != nil {
				var bad *badLineError
				if !errors.As(err, &bad) {
					prog.clear()
					if ctx.Err() != nil {
						return res, fmt.Errorf("enqueue: interrupted at %s:%d", name, lineNo)
					}
					return res, fmt.Errorf("enqueue: %s:%d: %w", name, lineNo, err)
				}
				res.bad++
				prog.clear()
				fmt.Fprintf(errw, "%s:%d: %v; line skipped\n", name, lineNo, bad.err)
			}
		}
		prog.update(read, res.published)
		if rerr == io.EOF {
			prog.clear()
			return res, nil
		}
	}
}

// badLineError is a line that is reported and skipped: not a job
// envelope, or larger than the queue accepts.
type badLineError struct{ err error }

func (e *badLineError) Error() string { return e.err.Error() }

// publishLine publishes one line and counts it in res. A line that is not
// a job envelope, or that the queue refuses as too large, is a
// *badLineError; any other error stops enqueue.
func publishLine(ctx context.Context, src sources.Source, line []byte, res *enqueueResult) error {
	id, err := checkEnvelope(line)
	if err != nil {
		return &badLineError{err}
	}
	m := sources.Outgoing{ID: id, Data: line}
	if pubAck, ok := src.(interface {
		PublishAck(context.Context, sources.Outgoing) (*jetstream.PubAck, error)
	}); ok {
		var ack *jetstream.PubAck
		if ack, err = pubAck.PublishAck(ctx, m); err == nil && ack.Duplicate {
			res.duplicates++
		}
	} else {
		err = src.Publish(ctx, m)
	}
	switch {
	case errors.Is(err, sources.ErrTooLarge):
		return &badLineError{err}
	case err != nil:
		return err
	}
	res.published++
	return nil
}

// checkEnvelope checks what enqueue can check of a job envelope (the
// worker checks the rest) and returns the message id: the envelope's id,
// or one derived from the content.
func checkEnvelope(line []byte) (string, error) {
	if line[0] != '{' {
		return "", errors.New("not a JSON object")
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal(line, &env); err != nil {
		return "", fmt.Errorf("invalid JSON: %v", err)
	}
	if raw, ok := env["cost"]; ok {
		var cost float64
		if err := json.Unmarshal(raw, &cost); err != nil || string(raw) == "null" {
			return "", fmt.Errorf(`"cost" must be a number, got %s`, excerpt(raw))
		}
		if cost < 0 {
			return "", fmt.Errorf(`"cost" must be >= 0, got %s`, excerpt(raw))
		}
	}
	if raw, ok := env["id"]; ok {
		var id string
		if err := json.Unmarshal(raw, &id); err != nil || raw[0] != '"' {
			return "", fmt.Errorf(`"id" must be a string, got %s`, excerpt(raw))
		}
		if strings.TrimSpace(id) == "" {
			return "", errors.New(`"id" must not be empty`)
		}
		return id, nil
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, line); err != nil {
		return "", fmt.Errorf("invalid JSON: %v", err)
	}
	sum := sha256.Sum256(compact.Bytes())
	return "sha256-" + hex.EncodeToString(sum[:16]), nil
}

func excerpt(raw []byte) string {
	if len(raw) > 40 {
		return string(raw[:40]) + "..."
	}
	return string(raw)
}

// progress draws a one-line progress bar on a terminal. A nil *progress
// draws nothing.
type progress struct {
	w     io.Writer
	total int64 // bytes, 0 when unknown
	last  time.Time
	drawn bool
}

func (p *progress) update(read int64, jobs int) {
	if p == nil || time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	p.drawn = true
	if p.total <= 0 {
		fmt.Fprintf(p.w, "\r%d jobs published", jobs)
		return
	}
	const width = 30
	frac := min(float64(read)/float64(p.total), 1)
	filled := int(frac * width)
	fmt.Fprintf(p.w, "\r[%s%s] %3.0f%% %d jobs published", strings.Repeat("=", filled), strings.Repeat(" ", width-filled), frac*100, jobs)
}

func (p *progress) clear() {
	if p == nil || !p.drawn {
		return
	}
	fmt.Fprint(p.w, "\r\033[K")
	p.drawn = false
	p.last = time.Time{}
}
