// Package jsonl is an output that appends each record as one line to a
// file. A record is confirmed once its line is written and the file
// fsynced; concurrent publishers share fsyncs (group commit), so many
// records confirmed at once cost one sync. Give each process its own file:
// a failed write is rolled back by truncating the file to its last whole
// line.
//
// The record bytes are written as they are, followed by a newline: they
// must hold no newline themselves (compact JSON never does). The key is
// not written; the record carries its own id.
package jsonl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/sluicehq/sluice/field"
	"github.com/sluicehq/sluice/sinks"
)

// Config describes the file.
type Config struct {
	// Path of the file; created if missing (with mode 0600: records may
	// hold job payloads), appended to otherwise. Required.
	Path string
}

// Validate reports a missing path.
func (c Config) Validate() error {
	if c.Path == "" {
		return field.Invalid("path", "required")
	}
	return nil
}

// Output appends records to a file. It is safe for concurrent use.
type Output struct {
	path string

	mu      sync.Mutex // guards f's writes, size, written, err, closed
	f       *os.File
	size    int64 // bytes in the file after the last whole line we wrote
	written uint64
	err     error // sticky: the file may hold a partial line
	closed  bool

	syncMu sync.Mutex // one fsync at a time; guards synced
	synced uint64     // every write numbered ≤ synced is on disk
}

var _ sinks.Output = (*Output)(nil)

// New opens (or creates) the file for appending. A new file's directory is
// fsynced too, so that the file itself survives a crash.
func New(cfg Config) (*Output, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("jsonl: %w", err)
	}
	_, statErr := os.Stat(cfg.Path)
	f, err := os.OpenFile(cfg.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("jsonl: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("jsonl: %w", err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		if err := syncDir(filepath.Dir(cfg.Path)); err != nil {
			f.Close()
			return nil, fmt.Errorf("jsonl: %w", err)
		}
	}
	return &Output{path: cfg.Path, f: f, size: fi.Size()}, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Publish appends data and a newline, and returns once they are fsynced.
// data must hold no newline. ctx is checked before the write; a write that
// has begun is finished.
func (o *Output) Publish(ctx context.Context, _ string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if bytes.IndexByte(data, '\n') >= 0 {
		return errors.New("jsonl: record holds a newline")
	}
	line := make([]byte, len(data)+1)
	copy(line, data)
	line[len(data)] = '\n'

	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return sinks.ErrClosed
	}
	if o.err != nil {
		err := o.err
		o.mu.Unlock()
		return err
	}
	n, err := o.f.Write(line)
	if err != nil {
		// Take a partial line back, so the next record starts a line; if
		// that fails the file is unusable.
		if n > 0 {
			if terr := o.f.Truncate(o.size); terr != nil {
				o.err = fmt.Errorf("jsonl: %s: partial line left after a failed write: %w", o.path, err)
			}
		}
		o.mu.Unlock()
		return fmt.Errorf("jsonl: %w", err)
	}
	o.size += int64(n)
	o.written++
	seq := o.written
	o.mu.Unlock()

	return o.sync(seq)
}

// sync returns once write number seq is on disk. Whoever holds syncMu
// syncs every write made so far, so the writers waiting behind it usually
// find their write already synced.
func (o *Output) sync(seq uint64) error {
	o.syncMu.Lock()
	defer o.syncMu.Unlock()
	if o.synced >= seq {
		return nil
	}
	o.mu.Lock()
	upTo := o.written
	o.mu.Unlock()
	if err := o.f.Sync(); err != nil {
		return fmt.Errorf("jsonl: %w", err)
	}
	o.synced = upTo
	return nil
}

// Close syncs and closes the file. Publish after Close returns
// sinks.ErrClosed.
func (o *Output) Close() error {
	o.syncMu.Lock() // lock order: syncMu, then mu
	defer o.syncMu.Unlock()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil
	}
	o.closed = true
	serr := o.f.Sync()
	if serr == nil {
		o.synced = o.written
	}
	cerr := o.f.Close()
	if err := errors.Join(serr, cerr); err != nil {
		return fmt.Errorf("jsonl: %w", err)
	}
	return nil
}
