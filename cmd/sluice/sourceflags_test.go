package main

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/spf13/cobra"
)

func TestSourceFlags(t *testing.T) {
	cmd := &cobra.Command{}
	var g sourceFlags
	g.register(cmd)
	if err := cmd.ParseFlags([]string{"--nats-port", "4300", "--data-dir", "/tmp/x", "--subject", "work.items"}); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default().Source
	if err := g.apply(cmd, &cfg); err != nil {
		t.Fatal(err)
	}
	js := cfg.JetStream
	if js.Embedded.Port != 4300 || js.Embedded.StoreDir != "/tmp/x" || js.PublishSubject != "work.items" ||
		len(js.Subjects) != 1 || js.Subjects[0] != "work.items" || js.URL != "embedded" || js.Stream != "SLUICE" {
		t.Errorf("after flags: %+v", js)
	}
	if err := cfg.Check(); err != nil {
		t.Errorf("validate: %v", err)
	}

	// A configured stream must cover the subject.
	cfg = config.Default().Source
	cfg.JetStream.Subjects = []string{"jobs.>"}
	if err := g.apply(cmd, &cfg); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Check(); err == nil || !strings.Contains(err.Error(), "source.jetstream.publish_subject") {
		t.Errorf("validate with an uncovered subject: %v", err)
	}

	cfg = config.Default().Source
	cfg.Kind = config.SourcePubSub
	if err := g.apply(cmd, &cfg); err == nil {
		t.Error("NATS flags applied to a pubsub source")
	}
}
