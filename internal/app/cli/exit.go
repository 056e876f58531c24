// Package cli holds the conventions that every sluice command follows:
// the exit status (0, 1, 2, 128 + signal), the handling of SIGINT and
// SIGTERM, and the behaviour of the command tree on a mistyped command,
// flag or help topic. The commands themselves live in cmd/sluice.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// The exit status of every command (docs/operations.md, "Exit status"):
//
//	0    done
//	1    a runtime failure (the queue, the target, a bad input line)
//	2    a usage or config error: an unknown command or flag, a bad flag
//	     value, a missing argument, a config file that does not decode or
//	     validate
//	130  stopped by SIGINT, 143 by SIGTERM (128 + the signal's number),
//	     after the command's clean shutdown
const (
	exitOK      = 0
	exitFailure = 1
	ExitUsage   = 2
)

// ExitError makes a command exit with status Code. A nil Err prints
// nothing (the command already reported).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// UsageError marks err as a usage or config error: exit status 2.
func UsageError(err error) error {
	if err == nil {
		return nil
	}
	var ee *ExitError
	if errors.As(err, &ee) && ee.Code == ExitUsage {
		return err
	}
	return &ExitError{Code: ExitUsage, Err: err}
}

// ExitStatus decides the process's exit status from the command's error
// and the signal that stopped it, if one did. A usage error wins over a
// signal (the command never started); a signal wins over a failure that
// the shutdown it asked for may have caused.
func ExitStatus(err error, sig os.Signal) int {
	var ee *ExitError
	isExit := errors.As(err, &ee)
	switch {
	case isExit && ee.Code == ExitUsage:
		return ExitUsage
	case sig != nil:
		if s, ok := sig.(syscall.Signal); ok {
			return 128 + int(s)
		}
		return 128 + int(syscall.SIGTERM)
	case err == nil:
		return exitOK
	case isExit:
		return ee.Code
	}
	return exitFailure
}

// SignalCatcher records the first SIGINT or SIGTERM and cancels the
// command's context with it. It stops listening before it cancels: once the
// context has ended, a second signal goes to the command's own handler, or,
// without one, ends the process at once (the default action).
type SignalCatcher struct {
	ch     chan os.Signal
	done   chan struct{}
	exited chan struct{}
	mu     sync.Mutex
	sig    os.Signal
}

// CatchSignals returns a context that a first SIGINT or SIGTERM cancels,
// with the signal as its cause, and the catcher that records it.
func CatchSignals(parent context.Context) (context.Context, *SignalCatcher) {
	ctx, cancel := context.WithCancelCause(parent)
	c := &SignalCatcher{ch: make(chan os.Signal, 1), done: make(chan struct{}), exited: make(chan struct{})}
	signal.Notify(c.ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		defer close(c.exited)
		select {
		case s := <-c.ch:
			c.record(s)
			signal.Stop(c.ch)
			cancel(signalCause{s})
		case <-c.done:
			cancel(nil)
		}
	}()
	return ctx, c
}

func (c *SignalCatcher) record(s os.Signal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sig == nil {
		c.sig = s
	}
}

// signalCause is the cause of a command context cancelled by a signal.
type signalCause struct{ sig os.Signal }

func (c signalCause) Error() string { return "sluice: " + c.sig.String() }

// StoppedBySignal reports whether ctx ended because of SIGINT or SIGTERM
// (rather than its parent ending, as in tests that run a command
// in-process).
func StoppedBySignal(ctx context.Context) bool {
	var sc signalCause
	return errors.As(context.Cause(ctx), &sc)
}

// Stop ends the catching and returns the signal caught, nil for none.
func (c *SignalCatcher) Stop() os.Signal {
	close(c.done)
	<-c.exited
	signal.Stop(c.ch)
	select {
	case s := <-c.ch: // arrived as the command returned
		c.record(s)
	default:
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sig
}

// Silent reports an ExitError without a message: the command already said
// what went wrong.
func Silent(err error) bool {
	var ee *ExitError
	return errors.As(err, &ee) && ee.Err == nil
}
