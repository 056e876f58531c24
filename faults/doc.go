// Package faults is sluice's fault-injection suite: it runs the real
// binaries (`sluice run`, `sluice testserver`) against NATS servers in
// their own processes, injects one fault per scenario (a worker killed, the
// server stopped, the target failing or hanging, poison messages, a
// SIGTERM, a cluster node lost), and audits every job afterwards.
//
// The model: every job has an id, published as its Nats-Msg-Id and sent to
// the target in the Sluice-Job-Id header. The target (the testserver,
// behind a Proxy that injects the target's faults) logs each id it
// accepts. When the queue has drained, Check compares the published ids
// with that log and with the dead-letter records: a job is lost when it
// is in neither, a duplicate when the target accepted it more than once,
// and dead when a record names it with a reason. Delivery is at-least-once,
// so lost must be 0 in every scenario; duplicates are bounded by the jobs
// a worker held when it died.
//
// cmd/faults is the command (`make faults`); docs/reliability.md lists the
// scenarios, their pass criteria and the latest results.
package faults
