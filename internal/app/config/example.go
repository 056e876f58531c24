package config

import (
	"bytes"
	"fmt"
)

// pubsubExample are the edits that make the example config (every option,
// with its default) one for the Pub/Sub source: the source, its project and
// setup, and the dead letters on a Pub/Sub topic (the default, nats, needs
// the JetStream source).
var pubsubExample = []struct{ from, to string }{
	{"# sluice config file: every option, with its default.\n",
		"# sluice config file for the Pub/Sub source (sluice config example --source\n# pubsub): every option, with its default, but the source and dead letters.\n"},
	{"source:\n  # jetstream (NATS JetStream; an embedded server by default) or pubsub.\n  kind: jetstream\n",
		"source:\n  # jetstream (NATS JetStream; an embedded server by default) or pubsub.\n  kind: pubsub\n"},
	{"    # The Google Cloud project; required with kind pubsub.\n    project: \"\"\n",
		"    # The Google Cloud project; required with kind pubsub.\n    project: ${GOOGLE_CLOUD_PROJECT:-my-project}\n"},
	{"    # Create the topic, dead-letter topic and subscription when missing.\n    setup: false\n",
		"    # Create the topic, dead-letter topic and subscription when missing\n    # (and the subscription that keeps the dead letters).\n    setup: true\n"},
	{"dead_letters:\n  kind: nats\n  subject: \"\"\n  topic: \"\"\n",
		"dead_letters:\n  kind: pubsub\n  subject: \"\"\n  topic: sluice-dead-letters\n"},
}

// PubSubExample returns the example config (config.example.yaml) made
// into one for the Pub/Sub source. It fails if the example no longer holds
// a line it edits.
func PubSubExample(example []byte) ([]byte, error) {
	out := example
	for _, e := range pubsubExample {
		if bytes.Count(out, []byte(e.from)) != 1 {
			return nil, fmt.Errorf("config: the example config does not hold %q once", e.from)
		}
		out = bytes.Replace(out, []byte(e.from), []byte(e.to), 1)
	}
	return out, nil
}
