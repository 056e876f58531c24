package cluster

import (
	"slices"
	"time"
)

// roster is what one member knows of the keys in the bucket: for each key,
// its latest value and when this member saw it written. It is the
// deterministic part of Membership and Leases: every method takes the
// current time, and nothing reads a clock.
//
// Liveness. A key counts as live while its last write, as this member saw
// it, is less than ttl old. The server removes a key ttl after its last
// write without telling the watchers (the bucket's max age leaves no
// marker on servers before 2.11), so a key whose writer died simply stops
// being live here at the same time as the server drops it; a delete marker
// (a clean leave, a released lease) removes it at once.
//
// Deafness. A member hears the others only through its watch, and the
// watch can stall while NATS is unreachable or while it recovers from a
// server restart. The member's own heartbeat, written every refresh, is the
// proof that the watch works: when its echo is more than hold overdue, the
// roster stops the clock (ages are measured at the instant it fell silent),
// and when the echo comes back the time it was deaf does not count towards
// any key's age. Without this, every other member would expire during an
// outage and the count would fall to 1, giving this member the whole budget
// exactly when nobody can coordinate. A roster without a self key (the
// leases' view) never stops its clock.
type roster[V any] struct {
	ttl      time.Duration
	entries  map[string]rosterEntry[V]
	self     string        // this member's own key, whose echo proves the watch
	hold     time.Duration // how overdue the echo may be before the clock stops
	selfSeen time.Time     // when the latest echo was seen; zero before the first
}

type rosterEntry[V any] struct {
	value V
	rev   uint64
	seen  time.Time // when the latest write was received (local clock)
}

// newRoster returns a roster whose clock stops when self's echo is more
// than hold late (never, if self is empty).
func newRoster[V any](ttl time.Duration, self string, hold time.Duration) *roster[V] {
	return &roster[V]{ttl: ttl, entries: map[string]rosterEntry[V]{}, self: self, hold: hold}
}

// put records a write of key seen at. The echo of self's own write after a
// silence restarts the clock: every entry's age resumes where it stopped.
func (r *roster[V]) put(key string, rev uint64, v V, at time.Time) {
	if key == r.self && r.self != "" {
		if !r.selfSeen.IsZero() {
			if stopped := r.selfSeen.Add(r.hold); at.After(stopped) {
				r.shift(at.Sub(stopped), at)
			}
		}
		r.selfSeen = at
	}
	r.entries[key] = rosterEntry[V]{value: v, rev: rev, seen: at}
}

// shift makes every entry gap younger, but none younger than now.
func (r *roster[V]) shift(gap time.Duration, now time.Time) {
	for k, e := range r.entries {
		e.seen = e.seen.Add(gap)
		if e.seen.After(now) {
			e.seen = now
		}
		r.entries[k] = e
	}
}

// remove records a delete (or purge) of key.
func (r *roster[V]) remove(key string) { delete(r.entries, key) }

// deaf reports whether the clock is stopped at now, and since when.
func (r *roster[V]) deaf(now time.Time) (time.Time, bool) {
	if r.self == "" || r.selfSeen.IsZero() {
		return time.Time{}, false
	}
	stopped := r.selfSeen.Add(r.hold)
	return stopped, now.After(stopped)
}

// asOf is the instant at which ages are measured: now, or the instant the
// watch fell silent.
func (r *roster[V]) asOf(now time.Time) time.Time {
	if stopped, ok := r.deaf(now); ok {
		return stopped
	}
	return now
}

// isLive reports whether an entry seen at seen is live at now.
func (r *roster[V]) isLive(seen, now time.Time) bool {
	return r.asOf(now).Sub(seen) < r.ttl
}

// prune forgets the entries that are no longer live at now.
func (r *roster[V]) prune(now time.Time) {
	for k, e := range r.entries {
		if !r.isLive(e.seen, now) {
			delete(r.entries, k)
		}
	}
}

// live returns the keys live at now, sorted.
func (r *roster[V]) live(now time.Time) []string {
	keys := make([]string, 0, len(r.entries))
	for k, e := range r.entries {
		if r.isLive(e.seen, now) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// get returns key's entry if it is live at now.
func (r *roster[V]) get(key string, now time.Time) (rosterEntry[V], bool) {
	e, ok := r.entries[key]
	if !ok || !r.isLive(e.seen, now) {
		return rosterEntry[V]{}, false
	}
	return e, true
}

// nextExpiry returns the earliest instant after now at which a live entry
// stops being live, or false if none will (no entries, or the clock is
// stopped).
func (r *roster[V]) nextExpiry(now time.Time) (time.Time, bool) {
	if _, ok := r.deaf(now); ok {
		return time.Time{}, false
	}
	var next time.Time
	for _, e := range r.entries {
		if !r.isLive(e.seen, now) {
			continue
		}
		if at := e.seen.Add(r.ttl); next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next, !next.IsZero()
}

// count returns N: the live keys at now, with self counted whether or not
// its own heartbeat has come back through the watch yet.
func count[V any](r *roster[V], self string, now time.Time) int {
	n := 0
	selfSeen := false
	for k, e := range r.entries {
		if r.isLive(e.seen, now) {
			n++
			if k == self {
				selfSeen = true
			}
		}
	}
	if !selfSeen {
		n++
	}
	return n
}

// refreshDue reports whether a key last written at last (zero: never) must
// be written again at now, every refresh.
func refreshDue(last, now time.Time, refresh time.Duration) bool {
	return last.IsZero() || !now.Before(last.Add(refresh))
}
