package main

import (
	"io"
	"net/http"
	"testing"

	"github.com/sluicehq/sluice/internal/config"
)

// parseEnv parses a config file with lookup as the environment.
func parseEnv(data []byte, lookup func(string) (string, bool)) (config.Config, error) {
	return config.Parse(data, config.Options{Lookup: lookup})
}

// get GETs url and returns the status and the body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}
