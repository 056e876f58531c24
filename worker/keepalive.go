package worker

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// keeper extends the ack deadline of every job the worker holds, every
// interval (AckWait/3) from the job's receipt, until the job is settled.
//
// The jobs are kept in one list in the order their next extension is due:
// every job waits the same interval, so a job added or extended now goes
// last. One goroutine (run) sleeps until the first one is due. A job's
// path takes a lock to join the list and one to leave it, where a timer
// per job would cost its allocations and two updates of the runtime's
// timer heap; nearly every job leaves long before it is due.
type keeper struct {
	interval time.Duration
	log      *slog.Logger

	mu         sync.Mutex
	head, tail *delivery
	wake       chan struct{} // a job joined an empty list; cap 1
	extending  sync.WaitGroup
}

// keepEntry is a delivery's state in the keeper.
type keepEntry struct {
	prev, next *delivery
	listed     bool
	due        time.Time
	// mu is held while the job's deadline is extended, and by remove:
	// once remove returns, no extension is made.
	mu      sync.Mutex
	removed bool
}

func (k *keeper) init(interval time.Duration, log *slog.Logger) {
	k.interval, k.log = interval, log
	k.wake = make(chan struct{}, 1)
}

// add keeps d alive from now.
func (k *keeper) add(d *delivery, now time.Time) {
	k.mu.Lock()
	k.pushLocked(d, now.Add(k.interval))
	k.mu.Unlock()
}

func (k *keeper) pushLocked(d *delivery, due time.Time) {
	e := &d.keep
	e.due, e.listed, e.prev, e.next = due, true, k.tail, nil
	if k.tail == nil {
		k.head = d
		select {
		case k.wake <- struct{}{}:
		default:
		}
	} else {
		k.tail.keep.next = d
	}
	k.tail = d
}

func (k *keeper) unlinkLocked(d *delivery) {
	e := &d.keep
	if !e.listed {
		return
	}
	if e.prev != nil {
		e.prev.keep.next = e.next
	} else {
		k.head = e.next
	}
	if e.next != nil {
		e.next.keep.prev = e.prev
	} else {
		k.tail = e.prev
	}
	e.prev, e.next, e.listed = nil, nil, false
}

// remove stops keeping d alive; an extension under way ends first.
func (k *keeper) remove(d *delivery) {
	e := &d.keep
	e.mu.Lock()
	e.removed = true
	k.mu.Lock()
	k.unlinkLocked(d)
	k.mu.Unlock()
	e.mu.Unlock()
}

// run extends the deadlines that fall due until ctx is done, then waits
// for the extensions under way.
func (k *keeper) run(ctx context.Context) {
	defer k.extending.Wait()
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		wait := k.extendDue(time.Now())
		if wait > 0 {
			t.Reset(wait)
		}
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-k.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// extendDue starts the extension of each job due at now, each in a
// goroutine of its own (a source's InProgress may be a network call), and
// returns the time until the next one is due, 0 for none.
func (k *keeper) extendDue(now time.Time) time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	for k.head != nil {
		d := k.head
		if wait := d.keep.due.Sub(now); wait > 0 {
			return wait
		}
		k.unlinkLocked(d)
		k.extending.Go(func() { k.extend(d) })
	}
	return 0
}

// extend extends d's deadline, unless d was removed, and keeps it in the
// list for the next one.
func (k *keeper) extend(d *delivery) {
	e := &d.keep
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.removed {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), k.interval)
	if err := d.msg.InProgress(ctx); err != nil {
		k.log.Warn("extending the ack deadline failed", "job", d.msg.ID(), "err", err)
	}
	cancel()
	k.mu.Lock()
	k.pushLocked(d, time.Now().Add(k.interval))
	k.mu.Unlock()
}
