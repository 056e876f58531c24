package memory

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice/sources"
)

// Defaults for the zero fields of Config.
const (
	DefaultAckWait         = 30 * time.Second
	DefaultDuplicateWindow = 2 * time.Minute
	DefaultPollInterval    = 5 * time.Second
)

var (
	// ErrStale is returned when settling a delivery that is no longer the
	// current one: the message was settled already, or its deadline passed
	// and it was delivered again.
	ErrStale = errors.New("memory: delivery is no longer in flight")
	// ErrClosed is returned by a Source, and by the messages it handed out,
	// after Close.
	ErrClosed = errors.New("memory: source closed")
)

// Config configures a Queue. The zero value is valid: every zero field takes
// its default.
type Config struct {
	// AckWait is how long a delivered message may stay unsettled before it
	// is delivered again. Default 30s.
	AckWait time.Duration
	// MaxDeliver is the most times one message is delivered; after that it
	// is dropped when it expires or is naked. 0 means no limit (default).
	MaxDeliver int
	// DuplicateWindow is how long a published ID is remembered: a second
	// Publish of the same ID within it is dropped. Default 2m.
	DuplicateWindow time.Duration
	// PollInterval is how long Receive waits for a message before it
	// returns none. Default 5s.
	PollInterval time.Duration
	// MaxMessageBytes is the largest payload Publish accepts; a larger
	// one is refused with an error wrapping sources.ErrTooLarge. 0 means
	// no limit (default).
	MaxMessageBytes int
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.AckWait < 0:
		return fmt.Errorf("memory: ack_wait: must be >= 0, got %s", c.AckWait)
	case c.MaxDeliver < 0:
		return fmt.Errorf("memory: max_deliver: must be >= 0, got %d", c.MaxDeliver)
	case c.DuplicateWindow < 0:
		return fmt.Errorf("memory: duplicate_window: must be >= 0, got %s", c.DuplicateWindow)
	case c.PollInterval < 0:
		return fmt.Errorf("memory: poll_interval: must be >= 0, got %s", c.PollInterval)
	case c.MaxMessageBytes < 0:
		return fmt.Errorf("memory: max_message_bytes: must be >= 0, got %d", c.MaxMessageBytes)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.AckWait == 0 {
		c.AckWait = DefaultAckWait
	}
	if c.DuplicateWindow == 0 {
		c.DuplicateWindow = DefaultDuplicateWindow
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	return c
}

// EventKind names a settlement recorded by Queue.Events.
type EventKind string

// Event kinds.
const (
	EventAck        EventKind = "ack"
	EventNak        EventKind = "nak"
	EventTerm       EventKind = "term"
	EventInProgress EventKind = "in_progress"
)

// Event is one successful settlement call, for tests to inspect what a
// consumer did with its messages.
type Event struct {
	Kind          EventKind
	ID            string
	DeliveryCount int           // of the delivery that was settled
	Delay         time.Duration // Nak only
	Reason        string        // Term only
	At            time.Time
}

// Queue is an in-memory queue shared by its consumers.
type Queue struct {
	cfg Config

	mu      sync.Mutex
	seq     uint64
	ready   entryHeap // every unsettled message, by due time then sequence
	seen    map[string]time.Time
	seenLog []seenID // publish order, to expire seen
	events  []Event
	changed chan struct{} // closed and replaced when the queue changes
}

type seenID struct {
	id string
	at time.Time
}

// entry is one unsettled message.
type entry struct {
	seq        uint64
	id         string
	data       []byte
	headers    map[string]string
	due        time.Time // deliverable from (when not in flight) or ack deadline (in flight)
	inFlight   bool
	deliveries int
	index      int       // in Queue.ready; -1 once settled or dropped
	at         time.Time // published
}

// NewQueue returns an empty queue.
func NewQueue(cfg Config) (*Queue, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Queue{
		cfg:     cfg.withDefaults(),
		seen:    make(map[string]time.Time),
		changed: make(chan struct{}),
	}, nil
}

// New returns a consumer of a new, empty queue; Source.Queue opens more
// consumers of it.
func New(cfg Config) (*Source, error) {
	q, err := NewQueue(cfg)
	if err != nil {
		return nil, err
	}
	return q.Source(), nil
}

// Config returns the queue's configuration with defaults applied.
func (q *Queue) Config() Config { return q.cfg }

// Source returns a new consumer of the queue.
func (q *Queue) Source() *Source {
	return &Source{q: q, closed: make(chan struct{})}
}

// Publish enqueues m; see Source.Publish.
func (q *Queue) Publish(ctx context.Context, m sources.Outgoing) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if q.cfg.MaxMessageBytes > 0 && len(m.Data) > q.cfg.MaxMessageBytes {
		return fmt.Errorf("memory: publish: %w: %d bytes, the limit is %d", sources.ErrTooLarge, len(m.Data), q.cfg.MaxMessageBytes)
	}
	now := time.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.expireSeen(now)
	if m.ID != "" {
		if _, dup := q.seen[m.ID]; dup {
			return nil
		}
		q.seen[m.ID] = now
		q.seenLog = append(q.seenLog, seenID{m.ID, now})
	}
	q.seq++
	id := m.ID
	if id == "" {
		id = strconv.FormatUint(q.seq, 10)
	}
	heap.Push(&q.ready, &entry{
		seq:     q.seq,
		id:      id,
		data:    append([]byte(nil), m.Data...),
		headers: maps.Clone(m.Headers),
		due:     now,
		at:      now,
	})
	q.signal()
	return nil
}

// Stats reports the queue's state: Pending counts messages never delivered,
// AckPending messages delivered and not settled (in flight or naked),
// Redelivered those of them delivered more than once, and DeadLetters the
// messages terminated (the queue keeps no other dead-letter store). Done
// counts the messages acked or terminated, and Oldest is when the oldest
// unsettled message was published.
func (q *Queue) Stats() sources.Stats {
	q.mu.Lock()
	defer q.mu.Unlock()
	var st sources.Stats
	for _, e := range q.ready {
		if st.Oldest.IsZero() || e.at.Before(st.Oldest) {
			st.Oldest = e.at
		}
		switch {
		case e.deliveries == 0:
			st.Pending++
		case e.deliveries > 1:
			st.Redelivered++
			st.AckPending++
		default:
			st.AckPending++
		}
	}
	for _, ev := range q.events {
		switch ev.Kind {
		case EventTerm:
			st.DeadLetters++
			st.Done++
		case EventAck:
			st.Done++
		}
	}
	return st
}

// Events returns a copy of the settlements made so far, in order.
func (q *Queue) Events() []Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]Event(nil), q.events...)
}

// Len returns the number of unsettled messages.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.ready)
}

// signal wakes every waiting Receive. Callers hold q.mu.
func (q *Queue) signal() {
	close(q.changed)
	q.changed = make(chan struct{})
}

func (q *Queue) expireSeen(now time.Time) {
	n := 0
	for n < len(q.seenLog) && now.Sub(q.seenLog[n].at) >= q.cfg.DuplicateWindow {
		if q.seen[q.seenLog[n].id].Equal(q.seenLog[n].at) {
			delete(q.seen, q.seenLog[n].id)
		}
		n++
	}
	q.seenLog = q.seenLog[n:]
}

// take delivers up to max due messages to src. When there are none it
// returns the time the next one falls due (zero if none) and the channel
// closed on the next change.
func (q *Queue) take(src *Source, max int, now time.Time) ([]sources.Message, time.Time, <-chan struct{}) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []sources.Message
	for len(out) < max && len(q.ready) > 0 && !q.ready[0].due.After(now) {
		e := q.ready[0]
		if q.cfg.MaxDeliver > 0 && e.deliveries >= q.cfg.MaxDeliver {
			heap.Pop(&q.ready)
			continue
		}
		e.deliveries++
		e.inFlight = true
		e.due = now.Add(q.cfg.AckWait)
		heap.Fix(&q.ready, 0)
		out = append(out, &message{
			src:      src,
			e:        e,
			delivery: e.deliveries,
			id:       e.id,
			data:     e.data,
			headers:  maps.Clone(e.headers),
		})
	}
	var next time.Time
	if len(q.ready) > 0 {
		next = q.ready[0].due
	}
	return out, next, q.changed
}

// settle applies one settlement of m's delivery.
func (q *Queue) settle(m *message, kind EventKind, delay time.Duration, reason string) error {
	now := time.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	e := m.e
	if e.index < 0 || !e.inFlight || e.deliveries != m.delivery {
		return ErrStale
	}
	switch kind {
	case EventAck, EventTerm:
		heap.Remove(&q.ready, e.index)
	case EventNak:
		e.inFlight = false
		e.due = now.Add(max(delay, 0))
		heap.Fix(&q.ready, e.index)
	case EventInProgress:
		e.due = now.Add(q.cfg.AckWait)
		heap.Fix(&q.ready, e.index)
	}
	q.events = append(q.events, Event{Kind: kind, ID: e.id, DeliveryCount: m.delivery, Delay: delay, Reason: reason, At: now})
	q.signal()
	return nil
}

// Source is one consumer of a Queue. It is safe for concurrent use.
type Source struct {
	q         *Queue
	closeOnce sync.Once
	closed    chan struct{}
}

var (
	_ sources.Source      = (*Source)(nil)
	_ sources.StatsSource = (*Source)(nil)
	_ sources.Message     = (*message)(nil)
)

// Queue returns the queue this consumer reads.
func (s *Source) Queue() *Queue { return s.q }

// Receive returns at most max messages, blocking until at least one is due,
// PollInterval passes (no messages, nil error), or ctx is done.
func (s *Source) Receive(ctx context.Context, max int) ([]sources.Message, error) {
	if max <= 0 {
		return nil, fmt.Errorf("memory: receive max must be > 0, got %d", max)
	}
	poll := time.NewTimer(s.q.cfg.PollInterval)
	defer poll.Stop()
	for {
		if s.isClosed() {
			return nil, ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		msgs, next, changed := s.q.take(s, max, time.Now())
		if len(msgs) > 0 {
			return msgs, nil
		}
		var wake <-chan time.Time
		var t *time.Timer
		if !next.IsZero() {
			t = time.NewTimer(time.Until(next))
			wake = t.C
		}
		select {
		case <-ctx.Done():
		case <-s.closed:
		case <-poll.C:
			if t != nil {
				t.Stop()
			}
			return nil, nil
		case <-changed:
		case <-wake:
		}
		if t != nil {
			t.Stop()
		}
	}
}

// Publish enqueues m. A message with an ID already published within the
// duplicate window is dropped (and Publish returns nil). A message without
// an ID gets its sequence number as ID and is never deduplicated.
func (s *Source) Publish(ctx context.Context, m sources.Outgoing) error {
	if s.isClosed() {
		return ErrClosed
	}
	return s.q.Publish(ctx, m)
}

// Stats reports the queue's state; see Queue.Stats.
func (s *Source) Stats(ctx context.Context) (sources.Stats, error) {
	if err := ctx.Err(); err != nil {
		return sources.Stats{}, err
	}
	return s.q.Stats(), nil
}

// Close stops this consumer. Its unsettled messages are delivered again
// after their ack deadline; settling them fails with ErrClosed.
func (s *Source) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	return nil
}

func (s *Source) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

// message is one delivery.
type message struct {
	src      *Source
	e        *entry
	delivery int // e.deliveries when handed out
	id       string
	data     []byte
	headers  map[string]string
}

func (m *message) ID() string                 { return m.id }
func (m *message) Data() []byte               { return m.data }
func (m *message) Headers() map[string]string { return m.headers }
func (m *message) DeliveryCount() int         { return m.delivery }

// PublishedAt is when the message was published to the queue.
func (m *message) PublishedAt() time.Time { return m.e.at }

func (m *message) Ack(ctx context.Context) error { return m.settle(ctx, EventAck, 0, "") }

func (m *message) Nak(ctx context.Context, delay time.Duration) error {
	return m.settle(ctx, EventNak, delay, "")
}

func (m *message) Term(ctx context.Context, reason string) error {
	return m.settle(ctx, EventTerm, 0, reason)
}

func (m *message) InProgress(ctx context.Context) error {
	return m.settle(ctx, EventInProgress, 0, "")
}

func (m *message) settle(ctx context.Context, kind EventKind, delay time.Duration, reason string) error {
	if m.src.isClosed() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return m.src.q.settle(m, kind, delay, reason)
}

// entryHeap orders entries by due time, then by sequence.
type entryHeap []*entry

func (h entryHeap) Len() int { return len(h) }
func (h entryHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].seq < h[j].seq
}
func (h entryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *entryHeap) Push(x any) {
	e := x.(*entry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	e.index = -1
	*h = old[:len(old)-1]
	return e
}
