package run

import (
	"context"
	"fmt"
	"strings"

	"cloud.google.com/go/pubsub/v2"

	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/sinks"
	"github.com/sluicehq/sluice/sinks/jsonl"
	"github.com/sluicehq/sluice/sinks/natsout"
	"github.com/sluicehq/sluice/sinks/pubsubout"
	"github.com/sluicehq/sluice/sources/natsjs"
)

// outputs are the results and dead-letter outputs of a run; nil for kind
// none.
type outputs struct {
	results, deadLetters sinks.Output
}

// close closes the outputs that were opened, the dead-letter output first.
func (o outputs) close() {
	if o.deadLetters != nil {
		o.deadLetters.Close()
	}
	if o.results != nil {
		o.results.Close()
	}
}

// openOutputs opens the results and dead-letter outputs. js is the
// JetStream source (nil for another source): the NATS outputs publish on
// its connection.
func openOutputs(ctx context.Context, cfg config.Config, js *natsjs.Source) (outputs, error) {
	var o outputs
	var err error
	if o.results, err = openOutput(ctx, "results", cfg.Results.Output(), cfg.Source, js); err != nil {
		return outputs{}, err
	}
	if o.deadLetters, err = openOutput(ctx, "dead_letters", cfg.DeadLetters, cfg.Source, js); err != nil {
		o.close()
		return outputs{}, err
	}
	return o, nil
}

// openOutput opens the results or dead-letter output; nil for kind none.
func openOutput(ctx context.Context, section string, o config.Output, sc config.Source, js *natsjs.Source) (sinks.Output, error) {
	switch o.Kind {
	case config.OutputNone:
		return nil, nil
	case config.OutputJSONL:
		out, err := jsonl.New(jsonl.Config{Path: o.Path})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", section, err)
		}
		return out, nil
	case config.OutputNATS:
		if js == nil || sc.Kind != config.SourceJetStream {
			return nil, fmt.Errorf("%s.kind: %q needs source.kind %q", section, config.OutputNATS, config.SourceJetStream)
		}
		out, err := natsout.New(ctx, js.JetStream(), NATSOutput(section, o, js.Config()))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", section, err)
		}
		return out, nil
	case config.OutputPubSub:
		return openPubSubOutput(ctx, section, o, sc)
	default:
		return nil, fmt.Errorf("%s.kind: must be one of none, nats, pubsub, jsonl, got %q", section, o.Kind)
	}
}

// PubSubClient opens a Pub/Sub client for the output section, with the
// source's project and credentials (the emulator's when
// PUBSUB_EMULATOR_HOST is set).
func PubSubClient(ctx context.Context, section string, sc config.Source) (*pubsub.Client, error) {
	if sc.Kind != config.SourcePubSub {
		return nil, fmt.Errorf("%s.kind: %q needs source.kind %q (for the project and credentials)", section, config.OutputPubSub, config.SourcePubSub)
	}
	client, err := pubsub.NewClient(ctx, sc.PubSub.Project, pubsubCredentials(sc.PubSub)...)
	if err != nil {
		return nil, fmt.Errorf("%s: pubsub client: %w", section, err)
	}
	return client, nil
}

// openPubSubOutput opens a Pub/Sub output on a client of its own; with
// source.pubsub.setup it creates the topic and the subscription that keeps
// the records.
func openPubSubOutput(ctx context.Context, section string, o config.Output, sc config.Source) (sinks.Output, error) {
	client, err := PubSubClient(ctx, section, sc)
	if err != nil {
		return nil, err
	}
	out, err := pubsubout.New(ctx, client, o.PubSub(sc.PubSub.Setup))
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("%s: %w", section, err)
	}
	return &clientOutput{Output: out, client: client}, nil
}

// clientOutput is a Pub/Sub output that owns its client.
type clientOutput struct {
	*pubsubout.Output
	client *pubsub.Client
}

func (o *clientOutput) Close() error {
	err := o.Output.Close()
	if cerr := o.client.Close(); err == nil {
		err = cerr
	}
	return err
}

// NATSOutput places dead letters on the source's dead-letter subject
// and stream (sluice.dead in SLUICE_DEAD by default), and results on the
// job subject's sibling "results" (sluice.results) in STREAM_RESULTS. The
// streams are created when the source sets its own up.
func NATSOutput(section string, o config.Output, jc natsjs.Config) natsout.Config {
	if section == "dead_letters" {
		subject := o.Subject
		if subject == "" {
			subject = jc.DeadLetterSubject
		}
		return natsout.Config{Subject: subject, Stream: jc.DeadLetterStream, CreateStream: jc.Setup}
	}
	subject := o.Subject
	if subject == "" {
		first := jc.Subjects[0]
		if i := strings.LastIndexByte(first, '.'); i >= 0 {
			subject = first[:i] + ".results"
		} else {
			subject = first + ".results"
		}
	}
	return natsout.Config{Subject: subject, Stream: jc.Stream + "_RESULTS", CreateStream: true}
}
