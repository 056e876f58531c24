// Package natsjs is the NATS JetStream source: jobs are messages in a
// stream (work-queue retention, file storage), read by one durable pull
// consumer that every worker shares.
//
// Receive is a bounded pull: it asks the server for at most the number of
// messages it was asked for, takes what is available at once, and when
// nothing is waits up to Config.FetchWait for one. Nothing is prefetched,
// so a worker holds only the jobs it has room for. Ack, Nak (NakWithDelay),
// Term (TermWithReason) and InProgress map to JetStream's acknowledgements;
// an unsettled message is redelivered after AckWait (or the Backoff
// schedule). Publish sets Nats-Msg-Id from the job id, so the stream drops
// a job published twice within its duplicate window.
//
// With URL "embedded" the Source starts an in-process nats-server with
// JetStream, storing under Embedded.StoreDir and listening on
// Embedded.Host:Port (127.0.0.1:4222) so that other processes can reach
// it; it installs no signal handlers and stops with Close. The process
// running it holds the store directory locked and writes the server's URL
// into it; another process opening the same directory (sluice enqueue next
// to sluice run) connects to that server instead of starting a second one,
// and so does one whose port is taken by a sluice embedded server (named
// "sluice-embedded"). A port taken by anything else is an error wrapping
// ErrPortInUse.
//
// The connection reconnects forever, with backoff; Receive waits out a
// reconnection and works again after it, and settlements of messages
// received before it still apply. With Setup, Open creates or updates the
// stream, the consumer, and a dead-letter stream (<stream>_DEAD on
// <subject prefix>.dead) so that a JetStream publish of a dead-letter
// record is acked. Credentials are never logged.
package natsjs
