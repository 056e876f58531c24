// Command generate writes the files generated from the config's tags:
// config.schema.json and the option tables of docs/configuration.md. Its
// argument is the repository's root; `go generate ./internal/app/config` runs
// it.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice/internal/app/config"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: generate ROOT")
	}
	root := args[0]
	schema, err := config.SchemaJSON()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, config.SchemaFile), schema, 0o644); err != nil {
		return err
	}
	page := filepath.Join(root, config.OptionsFile)
	doc, err := os.ReadFile(page)
	if err != nil {
		return err
	}
	doc, err = config.WithOptionTables(doc)
	if err != nil {
		return err
	}
	return os.WriteFile(page, doc, 0o644)
}
