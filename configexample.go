// Package sluice holds files of the repository root that the binary embeds.
// The program itself is cmd/sluice; the packages are limiter, sources,
// sinks and worker.
package sluice

import _ "embed"

// ExampleConfig is config.example.yaml: every option of the config file,
// commented, with its default. `sluice config example` prints it.
//
//go:embed config.example.yaml
var ExampleConfig []byte
