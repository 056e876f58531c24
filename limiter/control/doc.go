// Package control is the limiter's controller: the rules that decide the
// rate from the facts a limiter sees (grants, answers, refusals, quota
// headers) and the times they came at. It reads no clock and holds no
// goroutine or lock; every decision takes the time as an argument.
//
// It holds the limiter's options (Config, DefaultConfig, Validate, the
// bounds of a cost: MaxCost, CheckCost); the adaptive law (Law, and
// LawState, the part of it a fleet shares; docs/limiter.md, "The adaptive
// law"); and the classic AIMD and CUBIC rules (Rules applied to an Adapt
// for a Part of the budget). Package limiter runs them in its Core and
// Limiter; package limiter/fleet runs them for the whole budget of a
// fleet.
package control
