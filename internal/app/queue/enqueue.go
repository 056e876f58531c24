// Package queue is what the commands that talk to the queue do besides
// running a worker: `sluice enqueue` publishes job envelopes from a
// JSON-lines file, and `sluice status` reads the queue's state, its
// throughput and the time left.
package queue

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

	"golang.org/x/term"

	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/internal/app/run"
	"github.com/sluicehq/sluice/sources"
)

// clientLogger logs warnings and errors of the queue client to w.
func clientLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// EnqueueFile publishes the jobs of the file at path ("-": stdin) to the
// source cfg describes, reports each bad line on stderr and a summary on
// stdout. Bad lines are skipped: the result counts them, and it is for the
// caller to fail when there were any.
func EnqueueFile(ctx context.Context, cfg config.Source, path string, stdin io.Reader, stdout, stderr io.Writer) (Result, error) {
	if err := cfg.Check(); err != nil {
		return Result{}, err
	}
	in, size, name := stdin, int64(0), "stdin"
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return Result{}, fmt.Errorf("enqueue: %w", err)
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
		in, name = f, path
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	src, err := run.OpenSource(ctx, cfg, clientLogger(stderr))
	if err != nil {
		return Result{}, err
	}

	var prog *progressBar
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		prog = &progressBar{w: stderr, total: size}
	}
	res, err := enqueue(ctx, src, in, name, prog, stderr)
	fmt.Fprintf(stdout, "enqueue: %d jobs published (%d already queued), %d bad lines, from %s\n",
		res.Published, res.Duplicates, res.Bad, name)
	if cerr := src.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return res, err
}

// Result counts what an enqueue did.
type Result struct {
	Published  int // publishes acked, duplicates included
	Duplicates int // of which the queue already held (when it can tell)
	Bad        int // lines skipped
}

// Enqueue publishes each good line of r and reports each bad one on
// errw as "name:line: reason".
func Enqueue(ctx context.Context, src sources.Source, r io.Reader, name string, errw io.Writer) (Result, error) {
	return enqueue(ctx, src, r, name, nil, errw)
}

// enqueue is Enqueue drawing its progress on prog (nil: none).
func enqueue(ctx context.Context, src sources.Source, r io.Reader, name string, prog *progressBar, errw io.Writer) (Result, error) {
	var res Result
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
				res.Bad++
				prog.clear()
				fmt.Fprintf(errw, "%s:%d: %v; line skipped\n", name, lineNo, bad.err)
			}
		}
		prog.update(read, res.Published)
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
func publishLine(ctx context.Context, src sources.Source, line []byte, res *Result) error {
	id, err := CheckEnvelope(line)
	if err != nil {
		return &badLineError{err}
	}
	m := sources.Outgoing{ID: id, Data: line}
	if d, ok := src.(sources.Deduplicator); ok {
		var dup bool
		if dup, err = d.PublishDedup(ctx, m); err == nil && dup {
			res.Duplicates++
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
	res.Published++
	return nil
}

// CheckEnvelope checks what enqueue can check of a job envelope (the
// worker checks the rest) and returns the message id: the envelope's id,
// or one derived from the content.
func CheckEnvelope(line []byte) (string, error) {
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

// progressBar draws a one-line progress bar on a terminal. A nil
// *progressBar draws nothing.
type progressBar struct {
	w     io.Writer
	total int64 // bytes, 0 when unknown
	last  time.Time
	drawn bool
}

func (p *progressBar) update(read int64, jobs int) {
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

func (p *progressBar) clear() {
	if p == nil || !p.drawn {
		return
	}
	fmt.Fprint(p.w, "\r\033[K")
	p.drawn = false
	p.last = time.Time{}
}
