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
// its own included, and every change of N is reported (WithInstanceCount,
// which feeds the limiter's SetInstanceCount: each worker then runs at 1/N
// of the budget, its rate rescaled by old N / new N). A clean shutdown
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
// (WithShare): min, max, initial and current rate all in proportion, the
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
// # Structure
//
// The decisions are deterministic functions of the current time (key
// liveness, when to refresh, how many partitions to take or give), tested
// at fixed instants; Membership.Run and Leases.Run drive them on the real
// clock. Both are safe for concurrent use of their accessors.
package cluster
