package pubsubout

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluicehq/sluice/sinks"
)

const project = "sluice-test"

func fakeClient(t *testing.T) (*pstest.Server, *pubsub.Client) {
	t.Helper()
	srv := pstest.NewServer()
	conn, err := grpc.NewClient(srv.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	client, err := pubsub.NewClient(context.Background(), project, option.WithGRPCConn(conn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		client.Close()
		conn.Close()
		srv.Close()
	})
	return srv, client
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestPublish(t *testing.T) {
	srv, client := fakeClient(t)
	ctx := ctxT(t)
	o, err := New(ctx, client, Config{Topic: "dead", CreateTopic: true})
	if err != nil {
		t.Fatal(err)
	}
	// Creating an existing topic is fine.
	if _, err := New(ctx, client, Config{Topic: "projects/" + project + "/topics/dead", CreateTopic: true}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 25 {
		wg.Go(func() {
			if err := o.Publish(ctx, fmt.Sprintf("job-%d", i), []byte(fmt.Sprintf(`{"id":"job-%d"}`, i))); err != nil {
				t.Errorf("Publish: %v", err)
			}
		})
	}
	wg.Wait()
	msgs := srv.Messages()
	if len(msgs) != 25 {
		t.Fatalf("%d messages on the server; want 25", len(msgs))
	}
	for _, m := range msgs {
		key := m.Attributes[KeyAttribute]
		if string(m.Data) != fmt.Sprintf(`{"id":%q}`, key) {
			t.Errorf("message %q with key %q", m.Data, key)
		}
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if err := o.Publish(ctx, "k", nil); !errors.Is(err, sinks.ErrClosed) {
		t.Errorf("Publish after Close = %v; want sinks.ErrClosed", err)
	}
}

func TestMissingTopic(t *testing.T) {
	_, client := fakeClient(t)
	ctx := ctxT(t)
	o, err := New(ctx, client, Config{Topic: "missing"})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := o.Publish(ctx, "k", []byte(`{}`)); err == nil || !strings.HasPrefix(err.Error(), "pubsubout: publish to projects/sluice-test/topics/missing") {
		t.Errorf("publish to a missing topic: %v", err)
	}
}

func TestAttributeValue(t *testing.T) {
	long := strings.Repeat("é", 600) // 1200 bytes
	tests := []struct{ in, want string }{
		{"job-1", "job-1"},
		{"bad\xffutf8", "bad\uFFFDutf8"},
		{long, strings.Repeat("é", 512)},
		{"a" + long, "a" + strings.Repeat("é", 511)},
	}
	for _, tt := range tests {
		got := attributeValue(tt.in)
		if got != tt.want || len(got) > maxAttributeValue || !utf8.ValidString(got) {
			t.Errorf("attributeValue(%.20q) = %.20q (%d bytes); want %.20q", tt.in, got, len(got), tt.want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{Topic: "t"}, {Topic: "projects/p/topics/t", CreateTopic: true}} {
		if err := c.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", c, err)
		}
	}
	tests := []struct {
		c    Config
		want string
	}{
		{Config{}, "topic: required"},
		{Config{Topic: "projects/p/subscriptions/s"}, "topic: must be an id or projects/PROJECT/topics/ID"},
		{Config{Topic: "projects//topics/t"}, "topic: must be"},
		{Config{Topic: "a/b"}, "topic: must be"},
		{Config{Topic: "a b"}, "topic: must not contain spaces"},
	}
	for _, tt := range tests {
		if err := tt.c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%+v) = %v; want %q", tt.c, err, tt.want)
		}
	}
}

// TestEmulator runs against the emulator at PUBSUB_EMULATOR_HOST when it is
// set, on a topic of its own that it deletes at the end.
func TestEmulator(t *testing.T) {
	if os.Getenv("PUBSUB_EMULATOR_HOST") == "" {
		t.Skip("PUBSUB_EMULATOR_HOST not set")
	}
	ctx := ctxT(t)
	client, err := pubsub.NewClient(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	topic := fmt.Sprintf("projects/%s/topics/sluice-pubsubout-%d", project, time.Now().UnixNano())
	o, err := New(ctx, client, Config{Topic: topic, CreateTopic: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = client.TopicAdminClient.DeleteTopic(context.Background(), &pubsubpb.DeleteTopicRequest{Topic: topic})
	}()
	defer o.Close()
	if err := o.Publish(ctx, "k1", []byte(`{"id":"k1"}`)); err != nil {
		t.Fatal(err)
	}
}
