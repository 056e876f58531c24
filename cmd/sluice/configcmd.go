package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/app/cli"
	"github.com/sluicehq/sluice/internal/app/config"
)

// exampleConfig is config.example.yaml, embedded in the binary.
func exampleConfig() []byte { return sluice.ExampleConfig }

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print an example config file, or check one",
	}
	cmd.AddCommand(newConfigExampleCmd(), newConfigValidateCmd(), newConfigSchemaCmd())
	return cmd
}

func newConfigExampleCmd() *cobra.Command {
	var source string
	cmd := &cobra.Command{
		Use:   "example [--source jetstream|pubsub]",
		Short: "Print an example config file with every option and its default",
		Long: `example prints a config file with every option, commented, and its default.
With --source pubsub the source is Google Cloud Pub/Sub (project
${GOOGLE_CLOUD_PROJECT:-my-project}, setup on) and the dead letters go to a
Pub/Sub topic, kept by a subscription made with it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data := exampleConfig()
			switch source {
			case config.SourceJetStream:
			case config.SourcePubSub:
				var err error
				if data, err = config.PubSubExample(data); err != nil {
					return err
				}
			default:
				return cli.UsageError(fmt.Errorf("config example: --source must be %q or %q, got %q", config.SourceJetStream, config.SourcePubSub, source))
			}
			_, err := cmd.OutOrStdout().Write(data)
			return err
		},
	}
	cmd.Flags().StringVar(&source, "source", config.SourceJetStream, "the source of the example: jetstream or pubsub")
	return cmd
}

func newConfigValidateCmd() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "validate FILE | -c FILE",
		Short: "Check a config file: print OK, or every problem with its line",
		Long: `validate decodes the config file as sluice run would (unknown keys are
errors, ${VAR} and ${VAR:-default} are expanded) and checks every field.
It prints OK, or one line per problem naming the field, the value, the rule
and the line, and exits with status 2. Secret values (target headers, and
anything taken from the environment) are never printed. The file is given
as the argument or with -c.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 1 && file != "" && args[0] != file:
				return cli.UsageError(fmt.Errorf("config validate: two files, %q and -c %q; give one", args[0], file))
			case len(args) == 1:
				file = args[0]
			case file == "" && configFile("") != "":
				file = configFile("")
			case file == "":
				return cli.UsageError(fmt.Errorf("config validate: no file; usage: sluice config validate FILE (or set %s)", config.EnvConfigFile))
			}
			set, _ := cmd.Flags().GetStringArray("set")
			if _, err := config.Load(file, config.Options{Set: set}); err != nil {
				fmt.Fprintln(cmd.OutOrStdout(), err)
				return &cli.ExitError{Code: cli.ExitUsage}
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "OK")
			return err
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "config file to check (or give it as the argument; default $SLUICE_CONFIG)")
	cmd.Flags().StringArray("set", nil, "set a config value over the file, key.path=value (repeatable)")
	return cmd
}

func newConfigSchemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of the config file, for editors",
		Long: `schema prints the JSON Schema (draft 2020-12) of the config file. It is
generated from the definitions that decode the file, so it names every key,
its nesting, its type, its default and its description, lists the values of
every closed set (source.kind, limiter.controller, log.level...), and refuses
unknown keys. Any value may be a ${VAR} reference. The rules on values
(ranges, cross-field checks) are checked by "sluice config validate", not by
the schema.

config.example.yaml names it on its first line for the YAML language server
(VS Code, Neovim, JetBrains): save it as config.schema.json beside the file.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := config.SchemaJSON()
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
}

// configFile is the config file a command reads: its -c flag, else the
// file $SLUICE_CONFIG names, else "" (the defaults).
func configFile(flag string) string {
	if flag != "" {
		return flag
	}
	return os.Getenv(config.EnvConfigFile)
}
