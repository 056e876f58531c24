package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sluicehq/sluice/internal/schema"
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
	exitUsage   = 2
)

// exitError makes a command exit with a given status. A nil err prints
// nothing (the command already reported).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError marks err as a usage or config error: exit status 2.
func usageError(err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) && ee.code == exitUsage {
		return err
	}
	return &exitError{code: exitUsage, err: err}
}

// exitStatus decides the process's exit status from the command's error
// and the signal that stopped it, if one did. A usage error wins over a
// signal (the command never started); a signal wins over a failure that
// the shutdown it asked for may have caused.
func exitStatus(err error, sig os.Signal) int {
	var ee *exitError
	isExit := errors.As(err, &ee)
	switch {
	case isExit && ee.code == exitUsage:
		return exitUsage
	case sig != nil:
		if s, ok := sig.(syscall.Signal); ok {
			return 128 + int(s)
		}
		return 128 + int(syscall.SIGTERM)
	case err == nil:
		return exitOK
	case isExit:
		return ee.code
	}
	return exitFailure
}

// signalCatcher records the first SIGINT or SIGTERM and cancels the
// command's context with it. It then stops listening: a second signal goes
// to the command's own handler, or, without one, ends the process at once
// (the default action).
type signalCatcher struct {
	ch     chan os.Signal
	done   chan struct{}
	exited chan struct{}
	mu     sync.Mutex
	sig    os.Signal
}

func catchSignals(parent context.Context) (context.Context, *signalCatcher) {
	ctx, cancel := context.WithCancelCause(parent)
	c := &signalCatcher{ch: make(chan os.Signal, 1), done: make(chan struct{}), exited: make(chan struct{})}
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

func (c *signalCatcher) record(s os.Signal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sig == nil {
		c.sig = s
	}
}

// signalCause is the cause of a command context cancelled by a signal.
type signalCause struct{ sig os.Signal }

func (c signalCause) Error() string { return "sluice: " + c.sig.String() }

// stoppedBySignal reports whether ctx ended because of SIGINT or SIGTERM
// (rather than its parent ending, as in tests that run a command
// in-process).
func stoppedBySignal(ctx context.Context) bool {
	var sc signalCause
	return errors.As(context.Cause(ctx), &sc)
}

// stop ends the catching and returns the signal caught, nil for none.
func (c *signalCatcher) stop() os.Signal {
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

// applyConventions gives every command of the tree the same behaviour:
// flag errors and argument errors are usage errors (status 2) with a
// suggestion for a mistyped flag or command, and a command with
// subcommands prints its help when called alone and names an unknown
// subcommand as one.
func applyConventions(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	strictHelp(root)
	// The generated completion command takes its output writer when it is
	// made; lazyOut sends its script wherever the root writes when it runs.
	root.SetOut(lazyOut{root})
	root.InitDefaultCompletionCmd()
	root.SetOut(nil)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageError(fmt.Errorf("%w%s", err, flagSuggestion(cmd, err)))
	})
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		switch {
		case cmd.HasSubCommands() && cmd.Run == nil && cmd.RunE == nil:
			cmd.Args = cobra.ArbitraryArgs
			cmd.RunE = groupRun
		case cmd.Args != nil:
			check := cmd.Args
			cmd.Args = func(cmd *cobra.Command, args []string) error {
				return usageError(check(cmd, args))
			}
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// lazyOut writes to its command's output writer of the moment.
type lazyOut struct{ cmd *cobra.Command }

func (l lazyOut) Write(p []byte) (int, error) { return l.cmd.OutOrStdout().Write(p) }

// groupRun runs a command that only groups subcommands: alone it prints
// its help; with an argument, that argument is an unknown subcommand.
func groupRun(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	return usageError(fmt.Errorf("unknown command %q for %q; %s", args[0], cmd.CommandPath(), commandSuggestion(cmd, args[0])))
}

// commandSuggestion proposes what an unknown subcommand arg of cmd may have
// meant: a subcommand with a similar name, a subcommand that takes a FILE
// when arg looks like a file ("sluice config validate nope.yaml"), or the
// help.
func commandSuggestion(cmd *cobra.Command, arg string) string {
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(arg); len(s) > 0 {
		return fmt.Sprintf("did you mean %q?", cmd.CommandPath()+" "+s[0])
	}
	if strings.ContainsAny(arg, "./") {
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() && strings.Contains(sub.Use, "FILE") {
				return fmt.Sprintf("did you mean %q?", sub.CommandPath()+" "+arg)
			}
		}
	}
	return fmt.Sprintf("see %q", cmd.CommandPath()+" --help")
}

// flagSuggestion names the flag of cmd closest to an unknown one, as
// "; did you mean --max-in-flight?", or "" when none is close.
func flagSuggestion(cmd *cobra.Command, err error) string {
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) || ne.GetSpecifiedShortnames() != "" {
		return ""
	}
	typed := ne.GetSpecifiedName()
	best, bestD := "", 3 // at most 2 edits away, or a prefix
	visit := func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		d := schema.EditDistance(typed, f.Name)
		if strings.HasPrefix(f.Name, typed) && len(typed) >= 3 {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = f.Name, d
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean --%s?", best)
}

// strictHelp makes `sluice help TOPIC` a usage error (status 2) when TOPIC
// names no command; cobra's help command only prints "Unknown help topic"
// and succeeds.
func strictHelp(root *cobra.Command) {
	for _, c := range root.Commands() {
		if c.Name() != "help" || c.Run == nil {
			continue
		}
		show := c.Run
		c.Run = nil
		c.RunE = func(cmd *cobra.Command, args []string) error {
			target, rest, err := cmd.Root().Find(args)
			if err != nil || target == nil || len(rest) > 0 {
				return usageError(fmt.Errorf("help: no command %q; run 'sluice help' for the list", strings.Join(args, " ")))
			}
			show(cmd, args)
			return nil
		}
	}
}
