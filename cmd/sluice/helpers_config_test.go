package main

import "github.com/sluicehq/sluice/internal/config"

const minimalConfig = "target:\n  base_url: http://127.0.0.1:8080\n"

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// parseEnv parses a config file with lookup as the environment.
func parseEnv(data []byte, lookup func(string) (string, bool)) (config.Config, error) {
	return config.Parse(data, config.Options{Lookup: lookup})
}
