package cluster

import "time"

// IdleShare is the share of a worker that holds no lease: small enough to
// be nothing (at the default minimum of 60 units per minute it is one unit
// every eleven days), but positive, because a limiter's share must be. A
// worker without leases therefore sends at most what is left in its bucket
// when it loses them, which the rescale has already cut to at most one unit.
const IdleShare = 1e-6

// shareOf is the limiter share of a worker holding held of partitions.
func shareOf(held, partitions int) float64 {
	if held <= 0 {
		return IdleShare
	}
	return float64(held) / float64(partitions)
}

// leaseLife is how long after sending a successful create or update a
// worker may count on a lease: the server keeps it for ttl after it stored
// the write, which is after the write was sent; the margin of ttl/5 covers
// a late wake-up of the worker's loop.
func leaseLife(ttl time.Duration) time.Duration { return ttl - ttl/5 }

// leaseState is this worker's own lease on one partition.
type leaseState struct {
	rev   uint64    // the revision of its latest create or update
	until time.Time // when it lapses unless renewed (local clock)
}

// planInput is one worker's view of the partitions.
type planInput struct {
	partitions int
	members    []string       // live members' keys, self included
	self       string         // this worker's key
	held       int            // partitions this worker holds
	others     map[string]int // partitions held by each other live member
	taken      int            // partitions held by anybody, dead members' unexpired leases and this worker's included
}

// plan says how many partitions a worker should try to acquire and how
// many it should release (never both). With N live members it aims for
// ⌊P/N⌋ partitions, and takes one more, up to ⌈P/N⌉, only from what is
// free beyond what the members under ⌊P/N⌋ still need. It releases what it
// holds above ⌊P/N⌋ when the others need more than is free to reach ⌊P/N⌋,
// and what it holds above ⌈P/N⌉ when they want more than is free to reach
// ⌈P/N⌉. So the shares converge to ⌊P/N⌋ or ⌈P/N⌉ each, and nobody starves
// while someone holds more than ⌊P/N⌋.
func plan(in planInput) (acquire, release int) {
	n := max(len(in.members), 1)
	lo := in.partitions / n
	hi := (in.partitions + n - 1) / n
	free := max(in.partitions-in.taken, 0)
	need, want := 0, 0 // what the others lack to reach ⌊P/N⌋, and ⌈P/N⌉
	for _, k := range in.members {
		if k != in.self {
			need += max(lo-in.others[k], 0)
			want += max(hi-in.others[k], 0)
		}
	}
	switch {
	case in.held < lo:
		return min(lo-in.held, free), 0
	case in.held < hi && free > need:
		return min(hi-in.held, free-need), 0
	}
	if in.held > lo && need > free {
		release = min(in.held-lo, need-free)
	}
	if in.held > hi && want > free {
		release = max(release, min(in.held-hi, want-free))
	}
	return 0, release
}
