package config

import "github.com/sluicehq/sluice/internal/schema"

// SchemaFile is the name of the JSON Schema file that config.example.yaml
// names for editors (`sluice config schema > config.schema.json`).
const SchemaFile = "config.schema.json"

// JSONSchema returns the JSON Schema of the config file, generated from
// Config's tags by the decoder's own rules (internal/schema), with the
// defaults of Default. It checks keys, nesting and value types; the rules
// on values are the libraries' Validate, run by `sluice config validate`.
func JSONSchema() map[string]any {
	d := Default()
	s := schema.JSONSchema(&d, SchemaFile)
	s["title"] = "sluice config file"
	return s
}
