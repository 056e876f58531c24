package main

import "github.com/sluicehq/sluice/internal/config"

// parseEnv parses a config file with lookup as the environment.
func parseEnv(data []byte, lookup func(string) (string, bool)) (config.Config, error) {
	return config.Parse(data, config.Options{Lookup: lookup})
}
