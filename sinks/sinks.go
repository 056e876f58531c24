// Package sinks holds what a job's results go to: the target API call
// (subpackage httpapi) and the outputs that receive result and dead-letter
// records.
//
// An Output carries opaque bytes under a key (the job id); the record
// formats belong to the worker. Publish returns only once the record is
// durably accepted: written and fsynced (jsonl), acknowledged by a
// JetStream stream (natsout), or given a server message id (pubsubout).
// The worker acks a job only after that, so a record is never lost to a
// crash between the two. Records may be published more than once (at-least
// once); natsout deduplicates by key within the stream's duplicate window.
//
// Implementations: jsonl, natsout and pubsubout (an output of kind "none"
// is no output at all). All are safe for concurrent use.
package sinks

import (
	"context"
	"errors"
)

// ErrClosed is returned by Publish on an output that was closed.
var ErrClosed = errors.New("sinks: output closed")

// Output receives records.
type Output interface {
	// Publish stores data under key and returns once it is durably
	// accepted, or with an error (then it may or may not have been
	// stored; publishing again is safe).
	Publish(ctx context.Context, key string, data []byte) error
	// Close releases the output. It does not close connections the output
	// was given.
	Close() error
}
