// Package gcppubsub is a sources.Source on a Google Cloud Pub/Sub pull
// subscription.
//
// The model: a Source pulls with the unary Pull RPC, asking for exactly as
// many messages as Receive was given room for (MaxMessages = max). There is
// no StreamingPull, no prefetch and no buffer: a message this process holds
// is a message the worker asked for. Each received message is leased until
// its ack deadline, and settled with one RPC:
//
//   - Ack: Acknowledge.
//   - Nak(delay): ModifyAckDeadline to delay, rounded up to whole seconds and
//     capped at 600 s (MaxNakDelay, Pub/Sub's limit); 0 redelivers at once.
//   - InProgress: ModifyAckDeadline to Config.AckDeadline from now.
//   - Term(reason): publish a dead-letter record (original data and
//     attributes, plus the reason and the delivery count) to
//     Config.DeadLetterTopic, wait until Pub/Sub accepted it, then
//     Acknowledge. Without a dead-letter topic, Term only acknowledges.
//
// Delivery is at-least-once. A message not settled before its ack deadline
// (for instance because the process died) is delivered again. Pub/Sub
// without exactly-once delivery may also redeliver an acknowledged message
// in rare cases.
//
// Delivery counts: Pub/Sub reports a message's delivery attempt only on a
// subscription with a dead-letter policy; DeliveryCount is then that
// number. On a subscription without one, DeliveryCount counts the
// deliveries seen by this process only (it restarts at 1 in another process
// or after a restart, and an id not seen for an hour is forgotten), since a
// message's attributes cannot be changed. Config.MaxDeliveryAttempts gives
// a subscription created by Setup such a policy.
//
// Publish sends one message with a unary Publish RPC and returns once
// Pub/Sub accepted it. The job id goes into the JobIDAttribute attribute;
// Pub/Sub does not deduplicate, so publishing a job twice enqueues it twice.
//
// Pub/Sub has no cheap backlog count (Cloud Monitoring's
// subscription/num_undelivered_messages is the place for it, and the
// emulator has none), so Source does not implement sources.StatsSource.
//
// The client honours PUBSUB_EMULATOR_HOST: when it is set, every RPC goes
// to that emulator over plain gRPC without credentials.
package gcppubsub
