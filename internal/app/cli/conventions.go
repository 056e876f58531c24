package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/internal/schema"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// ApplyConventions gives every command of the tree the same behaviour:
// flag errors and argument errors are usage errors (status 2) with a
// suggestion for a mistyped flag or command, and a command with
// subcommands prints its help when called alone and names an unknown
// subcommand as one.
func ApplyConventions(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	strictHelp(root)
	// The generated completion command takes its output writer when it is
	// made; lazyOut sends its script wherever the root writes when it runs.
	root.SetOut(lazyOut{root})
	root.InitDefaultCompletionCmd()
	root.SetOut(nil)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return UsageError(fmt.Errorf("%w%s", flagValueError(err), flagSuggestion(cmd, err)))
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
				return UsageError(check(cmd, args))
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
	return UsageError(fmt.Errorf("unknown command %q for %q; %s", args[0], cmd.CommandPath(), commandSuggestion(cmd, args[0])))
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

// flagKinds says what a value of each of pflag's types must be.
var flagKinds = map[string]string{
	"float64": "a number", "float32": "a number",
	"int": "an integer", "int8": "an integer", "int16": "an integer", "int32": "an integer", "int64": "an integer",
	"uint": "an integer >= 0", "uint8": "an integer >= 0", "uint16": "an integer >= 0", "uint32": "an integer >= 0", "uint64": "an integer >= 0",
	"duration": "a duration such as 500ms, 30s or 2m",
	"bool":     "true or false",
}

// flagValueError rewrites pflag's error for a value that a flag of a plain
// type cannot parse ("invalid argument "x" for "--rate" flag:
// strconv.ParseFloat: parsing "x": invalid syntax") as the flag, the rule
// and the value: `--rate: must be a number, got "x"`. The errors of the
// other flags' own types already say what is wrong and are kept.
func flagValueError(err error) error {
	var ie *pflag.InvalidValueError
	if !errors.As(err, &ie) {
		return err
	}
	f := ie.GetFlag()
	kind, ok := flagKinds[f.Value.Type()]
	if !ok {
		return err
	}
	msg := fmt.Sprintf("--%s: must be %s, got %q", f.Name, kind, ie.GetValue())
	if errors.Is(err, strconv.ErrRange) {
		msg += " (out of range)"
	}
	return errors.New(msg)
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
				return UsageError(fmt.Errorf("help: no command %q; run 'sluice help' for the list", strings.Join(args, " ")))
			}
			show(cmd, args)
			return nil
		}
	}
}
