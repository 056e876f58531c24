package jetstream_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	js "github.com/sluicehq/sluice/sources/jetstream"
)

const benchBatch = 64

// BenchmarkReceiveAck measures messages per second received and acked
// through the Source (bounded fetch), against a bare nats.go loop of
// Fetch(batch) and Ack on the same embedded server, each on its own
// stream pre-filled with b.N messages. The _sync variants wait for the
// server to confirm each ack (Config.AckSync, DoubleAck).
func BenchmarkReceiveAck(b *testing.B) {
	srv, err := js.StartServer(js.EmbeddedConfig{StoreDir: b.TempDir(), Port: js.RandomPort}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Shutdown()
	for _, sync := range []bool{false, true} {
		suffix := ""
		if sync {
			suffix = "_sync"
		}
		b.Run("bare"+suffix, func(b *testing.B) { benchBare(b, srv.ClientURL(), sync) })
		b.Run("source"+suffix, func(b *testing.B) { benchSource(b, srv.ClientURL(), sync) })
	}
}

// prefill sets up a fresh stream and consumer through a Source and
// publishes n messages to it.
func prefill(b *testing.B, url string, n int, sync bool) js.Config {
	b.Helper()
	cfg := uniqueConfig(url)
	cfg.AckSync = sync
	cfg.FetchWait = time.Second
	s, err := js.Open(context.Background(), cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	data := []byte(`{"type":"bench","method":"GET","path":"/x"}`)
	for i := range n {
		if _, err := s.JetStream().PublishAsync(cfg.Subjects[0], data); err != nil {
			b.Fatal(err)
		}
		if i%4096 == 4095 {
			<-s.JetStream().PublishAsyncComplete()
		}
	}
	select {
	case <-s.JetStream().PublishAsyncComplete():
	case <-time.After(time.Minute):
		b.Fatal("prefill not acked")
	}
	return cfg
}

func benchSource(b *testing.B, url string, sync bool) {
	cfg := prefill(b, url, b.N, sync)
	s, err := js.Open(context.Background(), cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	b.ResetTimer()
	for n := 0; n < b.N; {
		msgs, err := s.Receive(ctx, min(benchBatch, b.N-n))
		if err != nil {
			b.Fatal(err)
		}
		for _, m := range msgs {
			if err := m.Ack(ctx); err != nil {
				b.Fatal(err)
			}
		}
		n += len(msgs)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

func benchBare(b *testing.B, url string, sync bool) {
	cfg := prefill(b, url, b.N, sync)
	nc, err := nats.Connect(url)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	jsc, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	cons, err := jsc.Consumer(ctx, cfg.Stream, cfg.Consumer)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for n := 0; n < b.N; {
		batch, err := cons.Fetch(min(benchBatch, b.N-n), jetstream.FetchMaxWait(time.Second))
		if err != nil {
			b.Fatal(err)
		}
		for m := range batch.Messages() {
			if sync {
				err = m.DoubleAck(ctx)
			} else {
				err = m.Ack()
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if err := batch.Error(); err != nil {
			b.Fatal(fmt.Errorf("fetch: %w", err))
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
