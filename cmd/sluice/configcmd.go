package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice"
)

// exampleConfig is config.example.yaml, embedded in the binary.
func exampleConfig() []byte { return sluice.ExampleConfig }

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print an example config file, or check one",
	}
	cmd.AddCommand(newConfigExampleCmd(), newConfigValidateCmd())
	return cmd
}

func newConfigExampleCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "example",
		Short: "Print an example config file with every option and its default",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write(exampleConfig())
			return err
		},
	}
}

func newConfigValidateCmd() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "validate -c FILE",
		Short: "Check a config file: print OK, or every problem with its line",
		Long: `validate decodes the config file as sluice run would (unknown keys are
errors, ${VAR} and ${VAR:-default} are expanded) and checks every field.
It prints OK, or one line per problem naming the field, the value, the rule
and the line, and exits with status 1. Secret values (target headers, and
anything taken from the environment) are never printed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return &exitError{code: 2, err: fmt.Errorf("config validate: -c FILE is required")}
			}
			if _, err := loadConfig(file); err != nil {
				fmt.Fprintln(cmd.OutOrStdout(), err)
				return &exitError{code: 1}
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "OK")
			return err
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "config file to check")
	return cmd
}
