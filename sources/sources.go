// Package sources defines what the worker needs of a durable queue: a
// bounded receive of messages, and per-message settlement (ack, delayed
// redelivery, termination, deadline extension). Backends live in the
// subpackages jetstream, gcppubsub and memory; sourcetest holds the
// conformance suite every backend passes.
//
// Delivery is at-least-once: a message that is neither acked nor terminated
// before its ack deadline is delivered again, to this or another consumer.
package sources

import (
	"context"
	"errors"
	"time"
)

// ErrTooLarge is wrapped by Publish when a message is larger than the
// backend accepts (a NATS server's max_payload, Pub/Sub's 10 MB). Nothing
// was published; other messages are not affected.
var ErrTooLarge = errors.New("sources: message too large")

// Message is one delivery of a queued job.
type Message interface {
	// ID is the job's id as published (JetStream Nats-Msg-Id, Pub/Sub
	// message id when none was set).
	ID() string
	// Data is the payload.
	Data() []byte
	// Headers are the message headers (JetStream) or attributes (Pub/Sub).
	Headers() map[string]string
	// DeliveryCount is 1 on the first delivery and grows with each
	// redelivery.
	DeliveryCount() int

	// Ack settles the message as done.
	Ack(ctx context.Context) error
	// Nak asks for redelivery no earlier than delay from now.
	Nak(ctx context.Context, delay time.Duration) error
	// Term settles the message as never to be redelivered.
	Term(ctx context.Context, reason string) error
	// InProgress extends the ack deadline by the backend's ack wait.
	InProgress(ctx context.Context) error
}

// Published is implemented by messages that know when they were
// published: JetStream's stream timestamp, Pub/Sub's publish time. The
// worker measures a job's age (sluice_job_age_seconds) from it.
type Published interface {
	PublishedAt() time.Time
}

// PublishedAt is when m was published, or the zero time when its source
// cannot tell.
func PublishedAt(m Message) time.Time {
	if p, ok := m.(Published); ok {
		return p.PublishedAt()
	}
	return time.Time{}
}

// Outgoing is a message to publish.
type Outgoing struct {
	// ID deduplicates: publishing the same ID twice within the backend's
	// duplicate window enqueues it once (where the backend supports it).
	ID      string
	Data    []byte
	Headers map[string]string
}

// Source is a durable queue.
type Source interface {
	// Receive returns at most max messages. It never prefetches beyond
	// what it was asked for. It blocks until at least one message is
	// available, the backend's poll interval ends (then it returns no
	// messages and a nil error), or ctx is done (then it returns ctx.Err()).
	Receive(ctx context.Context, max int) ([]Message, error)
	// Publish enqueues one message and returns once the backend has
	// durably accepted it.
	Publish(ctx context.Context, m Outgoing) error
	// Close releases the source. Unsettled messages are redelivered after
	// their ack deadline.
	Close() error
}

// Stats is a snapshot of a queue's state, for `sluice status`.
type Stats struct {
	Pending     int64 // waiting to be delivered (the backlog)
	AckPending  int64 // delivered, not yet settled (in flight)
	Redelivered int64 // delivered more than once and not yet settled
	DeadLetters int64 // dead-letter records held, -1 when unknown
	// Done counts the jobs settled for good (acked or dead-lettered) since
	// the queue was created, -1 when the source cannot tell. Its growth
	// over time is the queue's throughput, whichever workers drain it.
	Done int64
	// Oldest is when the oldest unsettled job (waiting or in flight) was
	// published; zero when there is none or the source cannot tell.
	Oldest time.Time
}

// StatsSource is implemented by sources that can report their state.
type StatsSource interface {
	Stats(ctx context.Context) (Stats, error)
}

// AckWaiter is a source whose messages must be settled, or extended with
// InProgress, within a deadline. The worker extends a held message every
// third of it; for a source that is not an AckWaiter it assumes
// worker.DefaultAckWait.
type AckWaiter interface {
	AckWait() time.Duration
}

// Connector is a source that can tell whether its connection to the
// backend is up (not reconnecting). Readiness asks it when it can.
type Connector interface {
	Connected() bool
}

// Healther is a source that can tell whether it can store and hand out
// jobs: Healthy returns nil when it can, else why not (the connection is
// down, the stream is gone, the store fails). Readiness asks it first.
type Healther interface {
	Healthy(ctx context.Context) error
}

// Deduplicator is a source that can tell, as it publishes, whether the
// queue already held a message with the same ID within its duplicate
// window (then it is not enqueued again).
type Deduplicator interface {
	PublishDedup(ctx context.Context, m Outgoing) (duplicate bool, err error)
}
