// Package memory is an in-memory sources.Source with the semantics of a
// durable pull queue, for tests and for running the worker without a broker.
//
// A Queue holds messages; any number of consumers (Source values from
// Queue.Source) share it, as the durable consumer of a JetStream stream or a
// Pub/Sub subscription is shared. A message is delivered to one consumer at
// a time. Once delivered it is in flight until it is settled or its ack
// deadline passes; then it is delivered again, with DeliveryCount one higher.
//   - Ack and Term remove the message for good (Term records the reason,
//     see Queue.Terminated).
//   - Nak(delay) makes it deliverable again delay from now.
//   - InProgress moves its ack deadline to AckWait from now.
//   - Publish with an ID already published within DuplicateWindow is a no-op.
//   - After MaxDeliver deliveries a message that expires or is naked is
//     dropped, as JetStream stops delivering it.
//
// Settling a delivery that is no longer current (the message was delivered
// again after its deadline, or was already settled) fails with ErrStale.
// Receive hands out at most the number of messages asked for; a message not
// handed out stays in the queue for any consumer.
//
// All timing uses the time package only (time.Now, timers), so a Queue
// created inside a testing/synctest bubble runs on the bubble's fake clock:
// a 30 s ack deadline passes in no real time. A Queue is safe for
// concurrent use.
package memory
