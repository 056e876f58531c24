// Package cluster shares one API budget among the workers that drain the
// same queue, over a NATS JetStream key-value bucket. NATS is the
// coordination engine; this package only follows its rules.
//
// # The bucket
//
// All workers that share a budget use one bucket (Config.Bucket), created
// on first use with a max age of Config.TTL (default 15s) and file storage.
// Every write to a key restarts its age; the server drops a key TTL after
// its last write. The bucket-wide max age is used rather than per-key TTLs
// because per-key TTLs need nats-server 2.11 or later and the bucket must
// work with older servers; the price is that the server removes an expired
// key without telling the watchers, so each worker ages the keys itself (a
// key not written for TTL, as this worker saw it, is gone). A bucket that
// already exists must have the same TTL, or Join fails: lease safety needs
// every worker to agree on it.
//
// # Membership: a live instance count
//
// Join writes the worker's heartbeat key "m.<id>-<random>" and Run rewrites
// it every Config.Refresh (default TTL/3), with the worker's id, start
// time, current rate, share and leases (see Member; `sluice status` lists
// them). Each worker watches the heartbeats; N is the number of live keys,
// its own included, and every change of N is applied to the worker's
// limiter (Membership.Drive in members mode, which calls its
// SetInstanceCount; WithInstanceCount reports it too): each worker then
// runs at 1/N of the budget, its rate rescaled by old N / new N. A clean shutdown
// deletes the key, so the others see N−1 at once; a killed worker drops out
// TTL after its last heartbeat.
//
// A worker hears the others only through its watch, and its own heartbeat
// coming back through the watch proves that the watch works. When that
// echo is half a refresh overdue (NATS unreachable, or a watch recovering
// from a server restart), keys stop ageing, so N keeps its last value; when
// the echo is back, the deaf time does not count towards any key's age.
// The count never falls to 1 because nobody can be heard.
//
// # Leases: capacity partitions
//
// With leases, the budget is split into Config.Partitions partitions
// (default 16), each worth budget/P. A worker takes partition p by creating
// key "p.<p>" (KV create: only if absent), renews it every Refresh by
// updating it at its last revision, and releases it by deleting it at that
// revision. Its share is held/P, applied to the limiter with SetShare
// (WithLimiter; WithShare reports it too): min, max, initial and current rate all in proportion, the
// rate found so far kept per unit of share. A worker that holds none runs
// at IdleShare, which is nothing in practice. Since a key can have one
// holder only, the shares of all workers never add up to more than the
// budget, whatever the workers know of each other.
//
// With N live members a worker aims for ⌊P/N⌋ partitions, and takes one
// more, up to ⌈P/N⌉, only out of what is free beyond what others under
// ⌊P/N⌋ need; it releases what it holds above ⌊P/N⌋ when others need more
// than is free. The shares converge to ⌊P/N⌋ or ⌈P/N⌉ each.
//
// A lease is counted on until 4/5 of the TTL after its last successful
// write was sent. The server keeps the key at least TTL after it stored
// that write, so a worker stops using a lease before anybody else can
// create it. If renewals fail (NATS unreachable), each lease lapses on
// time, the share falls, and with no lease left the worker idles at
// IdleShare: never more than it holds, never the whole budget. When NATS is
// back it acquires leases again as usual.
//
// # The fleet controller: one adaptive rate for the whole budget
//
// A Fleet (OpenFleet, Run) makes all workers of a budget run on one
// adaptive rate instead of N controllers of their own. Its state
// (fleet.State: the adaptive law's state for the whole budget, all
// of it but each worker's record, or the classic rules' control.Adapt;
// the fleet's pause; and when a worker last wrote it) is the key "fleet" of
// the bucket FleetBucket(Config.Bucket), which has no max age so that the
// rate outlives the workers. Every change is a compare-and-set on the key's
// revision: a worker reads the state, applies the limiter's own law
// (fleet.Rules: the adaptive law for the whole budget, or the
// classic rules with slow_start false) to it, and writes it only if nobody
// wrote meanwhile; otherwise it reads again and decides again. So the
// decisions of many workers are taken one after the other on the latest
// state and never compound.
//
//   - A throttle seen by any worker (reported by its limiter's throttle
//     hook, with what the worker's own record measured, divided by its
//     share) is the law's refusal applied to the fleet; the fleet's units
//     of the last minute (the worker's own count plus the Accepted its
//     peers' heartbeats carry) stand in when larger. A refusal of a request sent before the last
//     cut's Retry-After ran out changes nothing, so a burst of 429s across
//     the fleet is one cut. A Retry-After extends the fleet's pause (capped
//     at max_pause), which every worker then honours.
//   - A raise is the law's raise applied to the fleet, looked for every
//     second by each worker, outside the fleet's pause, and only if some
//     worker's requests waited since the rate last moved: its own limiter's,
//     or another's, from the Waited time its heartbeat carries. In startup
//     no higher than max(2, 0.3 s / the time the worker's last write took)
//     times what the fleet was accepted in the last minute
//     (docs/limiter.md, "Fleet").
//   - Each worker's limiter follows the state (limiter.Limiter.Follow): its
//     law is the fleet's times its share, 1/N in members mode, held/P in
//     leases mode; its bucket starts to fill at the worker's own phase, and
//     a cut empties it down to the head of its queue.
//   - Remembered rate: a running worker confirms the state once per Refresh
//     for the fleet. A worker that starts runs on the stored state if it was
//     written less than FleetConfig.Remember (default 1h) ago, at 0.98 of
//     the law's estimate; else it writes a new state at the initial rate.
//   - Faults: when a write or read fails (NATS unreachable), the worker's
//     limiter runs its own law again from the fleet state it had
//     (limiter.Limiter.Lead); the
//     throttles it sees meanwhile are kept. Each second it tries to read the
//     state again; once it can, it applies those throttles to the fleet by
//     the same rule and follows the fleet again. A deleted fleet bucket is
//     created again by the first worker that finds it gone; every worker
//     watches it again, and none stops.
//   - Shared state is input: every read of the fleet state and of a
//     heartbeat is checked against what its values mean (checkFleetState,
//     checkMember: times near the reader's clock, a pause at most max_pause
//     ahead, rates within the budget and near what the fleet was measured
//     to accept, finite counts); a value that breaks its rule is not used,
//     is logged once and counted, and the fleet state is rewritten at the
//     next write. Each heartbeat's clock is measured against the server's
//     (Member.Skew).
//
// # Structure
//
// The decisions are deterministic functions of the current time (key
// liveness, when to refresh, how many partitions to take or give, the
// fleet's cuts, raises and remembered rate), tested at fixed instants;
// Membership.Run, Leases.Run and Fleet.Run drive them on the real clock. Both are safe for concurrent use of their accessors.
package cluster
