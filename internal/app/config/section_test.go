package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/field"
	"github.com/sluicehq/sluice/sources/gcppubsub"
)

func TestPubsubConfigDecode(t *testing.T) {
	cfg, err := Parse([]byte(`
source:
  kind: pubsub
  pubsub:
    project: my-project
    subscription: jobs-sub
    topic: jobs
    dead_letter_topic: jobs-dead
    ack_deadline: 120s
    poll_interval: 2s
    setup: true
    max_delivery_attempts: 20
dead_letters:
  kind: none
`), Options{Lookup: noEnv, NoTarget: true})
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.Source.PubSub.Lib()
	want := gcppubsub.Config{Project: "my-project", Subscription: "jobs-sub", Topic: "jobs", DeadLetterTopic: "jobs-dead",
		AckDeadline: 120 * time.Second, PollInterval: 2 * time.Second, Setup: true, MaxDeliveryAttempts: 20}
	if got.Project != want.Project || got.Subscription != want.Subscription || got.Topic != want.Topic ||
		got.DeadLetterTopic != want.DeadLetterTopic || got.AckDeadline != want.AckDeadline ||
		got.PollInterval != want.PollInterval || got.Setup != want.Setup || got.MaxDeliveryAttempts != want.MaxDeliveryAttempts {
		t.Errorf("decoded %+v, want %+v", got, want)
	}
}

func noEnv(string) (string, bool) { return "", false }

func TestPubsubConfigErrors(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"    subscription: jobs\n", "config: source.pubsub.project: must be set"},
		{"    project: p-123456\n    ack_deadline: 700s\n", "config: source.pubsub.ack_deadline: must be between 1s and 10m0s, got 11m40s (line 5)"},
		{"    project: p-123456\n    poll_interval: 0s\n", "config: source.pubsub.poll_interval: must be > 0, got 0s (line 5)"},
		{"    project: p-123456\n    dead_letter_topic: sluice-jobs\n", "config: source.pubsub.dead_letter_topic: must differ from topic"},
		{"    project: p-123456\n    max_delivery_attempts: 10\n    dead_letter_topic: dead\n", "config: source.pubsub.max_delivery_attempts: applies only when setup creates the subscription"},
		{"    project: p-123456\n    subscription: 9bad\n", "config: source.pubsub.subscription: name must start with a letter"},
		{"    project: p-123456\n    credentials_file: /nonexistent/key.json\n", "config: source.pubsub.credentials_file: stat /nonexistent/key.json"},
		{"    project: p-123456\n    topics: x\n", "source.pubsub.topics"},
	}
	for _, tc := range cases {
		_, err := Parse([]byte("source:\n  kind: pubsub\n  pubsub:\n"+tc.yaml), Options{Lookup: noEnv, NoTarget: true})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("config\n%s: error %v, want it to contain %q", tc.yaml, err, tc.want)
		}
	}
}

func TestPubsubConfigDefaults(t *testing.T) {
	c := defaultPubSub()
	if err := field.Under("source.pubsub", c.check()); err == nil || !strings.Contains(err.Error(), "source.pubsub.project: must be set") {
		t.Fatalf("defaults without a project: %v", err)
	}
	c.Project = "my-project"
	if err := c.check(); err != nil {
		t.Fatalf("defaults with a project: %v", err)
	}
}

func TestOpsConfigValidate(t *testing.T) {
	cases := []struct {
		listen  string
		wantErr string // "" means valid
	}{
		{DefaultOpsListen, ""},
		{"off", ""},
		{"127.0.0.1:0", ""},
		{"[::1]:9464", ""},
		{"localhost:9464", ""},
		{"0.0.0.0:9464", ""},
		{":9464", ""},
		{"metrics.internal:9464", ""},
		{"", `metrics.listen: must be host:port or "off", got ""`},
		{"9464", `metrics.listen: must be host:port or "off", got "9464"`},
		{"OFF", `metrics.listen: must be host:port or "off", got "OFF"`},
		{"127.0.0.1:http", `metrics.listen: port must be a number from 0 to 65535, got "http"`},
		{"127.0.0.1:70000", `metrics.listen: port must be a number from 0 to 65535, got "70000"`},
		{"bad host:9464", `metrics.listen: host must be an IP address or a host name, got "bad host"`},
	}
	for _, c := range cases {
		err := field.Under("metrics", Metrics{Listen: c.listen}.Check())
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("listen %q: unexpected error %v", c.listen, err)
		case c.wantErr != "" && (err == nil || err.Error() != c.wantErr):
			t.Errorf("listen %q: error %v, want %q", c.listen, err, c.wantErr)
		}
	}
}

func TestShareConfigErrors(t *testing.T) {
	for _, c := range []struct {
		name, yaml, want string
	}{
		{"mode", "limiter:\n  share:\n    mode: dynamic\n", `config: limiter.share.mode: must be "static", "members" or "leases", got "dynamic" (line 5)`},
		{"instances", "limiter:\n  instances: 3\n  share:\n    mode: members\n", `config: limiter.instances: must be 1 with limiter.share.mode "members" (the count is live), got 3 (line 4)`},
		{"ttl", "limiter:\n  share:\n    mode: leases\n    ttl: 10ms\n", `config: limiter.share.ttl: must be >= 1s, got 10ms (line 6)`},
		{"partitions", "limiter:\n  share:\n    mode: leases\n    partitions: 5000\n", `config: limiter.share.partitions: must be between 1 and 1024, got 5000 (line 6)`},
		{"bucket", "limiter:\n  share:\n    mode: members\n    bucket: a.b\n", `config: limiter.share.bucket: must hold only letters, digits, '-' and '_', got "a.b" (line 6)`},
		{"pubsub", "source:\n  kind: pubsub\n  pubsub:\n    project: p\n    subscription: subs\nlimiter:\n  share:\n    mode: members\n",
			`config: limiter.share.nats_url: required with source.kind "pubsub" (a NATS server to coordinate through) (line 9)`},
		{"url", "limiter:\n  share:\n    mode: members\n    nats_url: '::'\n", `config: limiter.share.nats_url: must be a URL such as nats://127.0.0.1:4222 (line 6)`},
		{"remember", "limiter:\n  share:\n    remember: -1s\n", `config: limiter.share.remember: must be >= 0s, got -1s`},
	} {
		_, err := Parse([]byte(minimalConfig+c.yaml), Options{Lookup: envOf(nil)})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v\nwant a line %s", c.name, err, c.want)
		}
	}
	cfg, err := Parse([]byte(minimalConfig+"limiter:\n  share:\n    mode: leases\n"), Options{Lookup: envOf(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Limiter.Share.BucketName(cfg.Target.BaseURL); !strings.HasPrefix(got, "sluice_") || strings.ContainsAny(got, ".:/") {
		t.Errorf("default bucket %q", got)
	}
	if got := (Share{Bucket: "mine"}).BucketName("http://x"); got != "mine" {
		t.Errorf("bucket = %q", got)
	}
}

func TestJetstreamConfigValidate(t *testing.T) {
	c := Default().Source.JetStream
	if err := field.Under("source.jetstream", c.check()); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	c.AckWait = time.Duration(-1)
	c.Auth.Token = "abcd-secret"
	c.Auth.TokenFile = filepath.Join(t.TempDir(), "missing")
	err := field.Under("source.jetstream", c.check())
	if err == nil {
		t.Fatal("invalid config passed")
	}
	for _, want := range []string{"source.jetstream.ack_wait:", "source.jetstream.auth.token_file:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "abcd-secret") {
		t.Errorf("error shows the token: %v", err)
	}
}
