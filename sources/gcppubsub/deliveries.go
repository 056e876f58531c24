package gcppubsub

import (
	"slices"
	"sync"
	"time"
)

// deliveries counts, per message id, how often this process has received a
// message. Pub/Sub reports a delivery attempt only on subscriptions with a
// dead-letter policy, and a message's attributes cannot be changed, so
// without a policy this in-process count is the best there is: it restarts
// at 1 in every process that receives the message.
//
// Memory is bounded: an entry goes on Ack or Term, after ttl without a
// delivery, and, past max entries, the least recently seen go first. Time is
// an argument, so the type holds no clock of its own.
type deliveries struct {
	mu        sync.Mutex
	ttl       time.Duration
	max       int
	entries   map[string]*delivery
	lastSweep time.Time
}

type delivery struct {
	count    int
	lastSeen time.Time
}

// Bounds of the in-process delivery count.
const (
	deliveryTTL        = time.Hour
	maxTrackedMessages = 100_000
)

func newDeliveries(ttl time.Duration, max int) *deliveries {
	return &deliveries{ttl: ttl, max: max, entries: make(map[string]*delivery)}
}

// observe records one delivery of id at now and returns the count so far.
func (d *deliveries) observe(id string, now time.Time) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.entries[id]
	if e != nil && now.Sub(e.lastSeen) > d.ttl {
		e = nil // forgotten: counts restart
	}
	if e == nil {
		e = &delivery{}
		d.entries[id] = e
	}
	e.count++
	e.lastSeen = now
	if len(d.entries) > d.max || now.Sub(d.lastSweep) >= d.ttl/4 {
		d.sweep(now)
	}
	return e.count
}

// forget drops id once its message is settled for good.
func (d *deliveries) forget(id string) {
	d.mu.Lock()
	delete(d.entries, id)
	d.mu.Unlock()
}

// len reports how many ids are tracked.
func (d *deliveries) len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.entries)
}

// sweep drops expired entries and, while more than max remain, the least
// recently seen ones, down to 90 % of max so that sweeps stay rare.
// Called with mu held.
func (d *deliveries) sweep(now time.Time) {
	d.lastSweep = now
	for id, e := range d.entries {
		if now.Sub(e.lastSeen) > d.ttl {
			delete(d.entries, id)
		}
	}
	if len(d.entries) <= d.max {
		return
	}
	type aged struct {
		id   string
		seen time.Time
	}
	all := make([]aged, 0, len(d.entries))
	for id, e := range d.entries {
		all = append(all, aged{id, e.lastSeen})
	}
	slices.SortFunc(all, func(a, b aged) int { return a.seen.Compare(b.seen) })
	keep := d.max * 9 / 10
	for _, a := range all[:len(all)-keep] {
		delete(d.entries, a.id)
	}
}
