// Package fleet is the state of a fleet controller: one rate for the
// whole budget that many instances share, decided by the rules of package
// control and followed by each instance's limiter (limiter.Core.Follow).
//
// It holds State (the rules' state for the whole budget, the fleet's
// pause, and when a worker last wrote it: what package cluster keeps in
// NATS KV and the simulator in memory), Rules (the pure decisions on a
// State: start, resume, throttle, raise, touch, and the stagger of a
// pause's end), and what the workers tell them: Report (a throttle one
// limiter observed) and View (what a raise reads).
package fleet
