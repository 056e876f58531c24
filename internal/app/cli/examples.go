package cli

import (
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// examples is the Examples section of every sluice command's help, by
// command path. Each line that starts with "sluice " is a command line that
// cmd/sluice's TestEveryCommandHasExamples parses against the command tree, so an
// example cannot name a flag or command that does not exist.
var examples = map[string]string{
	"sluice": `  # Try it with no infrastructure: a model API, an embedded queue, two workers
  sluice demo

  # Drain a queue into an API described by a config file
  sluice config example > sluice.yaml
  sluice run -c sluice.yaml`,
	"sluice version": `  sluice version
  sluice --version`,
	"sluice run": `  # Embedded JetStream in ./sluice-data, the target given on the command line
  sluice run --target http://127.0.0.1:8080/ --rate 1200

  # Everything from a config file
  sluice run -c /etc/sluice/sluice.yaml

  # With the live page of this worker at http://127.0.0.1:9464/ui/
  sluice run -c sluice.yaml --ui`,
	"sluice enqueue": `  # Publish one job per line of a JSON-lines file
  sluice enqueue jobs.jsonl

  # From stdin, onto the queue a config file names
  printf '{"id":"job-1","type":"export","body":{"n":1}}\n' | sluice enqueue -c sluice.yaml -

  # Onto an external NATS server
  sluice enqueue --nats-url nats://127.0.0.1:4222 jobs.jsonl`,
	"sluice status": `  # Backlog, in flight, done, throughput and ETA of the embedded queue
  sluice status

  # Of the queue a config file names, refreshed every 2 s until Ctrl-C
  sluice status -c sluice.yaml --watch

  # As JSON, for scripts
  sluice status -c sluice.yaml --json`,
	"sluice config": `  sluice config example > sluice.yaml
  sluice config validate sluice.yaml`,
	"sluice config example": `  sluice config example > sluice.yaml`,
	"sluice config schema": `  # Beside the config file, for editors (config.example.yaml names it)
  sluice config schema > config.schema.json`,
	"sluice config validate": `  sluice config validate sluice.yaml
  sluice config validate -c /etc/sluice/sluice.yaml`,
	"sluice dlq": `  sluice dlq replay -c sluice.yaml --dry-run`,
	"sluice dlq replay": `  # List the dead letters of one type that a replay would enqueue
  sluice dlq replay -c sluice.yaml --type export --dry-run

  # Enqueue again the jobs that failed with HTTP 503
  sluice dlq replay -c sluice.yaml --status 503`,
	"sluice limiter": `  sluice limiter replay trace.jsonl`,
	"sluice limiter replay": `  sluice limiter replay trace.jsonl
  sluice limiter replay - < trace.jsonl`,
	"sluice healthcheck": `  # The container's HEALTHCHECK
  sluice healthcheck

  # Another endpoint, a shorter timeout
  sluice healthcheck --url http://127.0.0.1:9464/readyz --timeout 1s`,
	"sluice simulate": `  # 15 virtual minutes of the first-throttle scenario
  sluice simulate --scenario first-throttle --instances 2

  # Every mode on every scenario
  sluice simulate --compare

  # The interactive simulator page
  sluice simulate --serve 127.0.0.1:8088`,
	"sluice testserver": `  # A model API with a hidden quota of 3000 units per minute
  sluice testserver --quota 3000 --listen 127.0.0.1:8080

  # Jobs of type export cost 5 units; log every accepted call
  sluice testserver --type-cost export=5 --log accepted.log`,
	"sluice demo": `  sluice demo
  sluice demo --jobs 1000 --workers 3 --quota 2400`,
	"sluice help": `  sluice help run
  sluice help config validate`,
	"sluice completion": `  source <(sluice completion bash)`,
	"sluice completion bash": `  source <(sluice completion bash)
  sluice completion bash > /etc/bash_completion.d/sluice`,
	"sluice completion zsh":        `  sluice completion zsh > "${fpath[1]}/_sluice"`,
	"sluice completion fish":       `  sluice completion fish > ~/.config/fish/completions/sluice.fish`,
	"sluice completion powershell": `  sluice completion powershell | Out-String | Invoke-Expression`,
}

// SetExamples sets the Examples section of every command of the tree that
// has one in examples and no Example of its own.
func SetExamples(root *cobra.Command) {
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		if cmd.Example == "" {
			cmd.Example = examples[cmd.CommandPath()]
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// ExampleCommandLines returns the sluice command lines of an Examples
// text: each line's words after "sluice", up to a pipe or redirection.
func ExampleCommandLines(example string) [][]string {
	var out [][]string
	for _, line := range strings.Split(example, "\n") {
		line = strings.TrimSpace(line)
		if i := strings.Index(line, "| sluice "); i >= 0 {
			line = line[i+2:]
		}
		if strings.HasPrefix(line, "source <(") {
			line = strings.TrimSuffix(strings.TrimPrefix(line, "source <("), ")")
		}
		if !strings.HasPrefix(line, "sluice ") && line != "sluice" {
			continue
		}
		var words []string
		for _, w := range strings.Fields(line)[1:] {
			if w == "|" || w == ">" || w == "<" || w == "&&" {
				break
			}
			words = append(words, w)
		}
		out = append(out, words)
	}
	return out
}

// ExamplePaths lists the command paths that have examples, sorted.
func ExamplePaths() []string { return slices.Sorted(maps.Keys(examples)) }
