package natsjs_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/testkit/jsclient"
	"github.com/sluicehq/sluice/sources/natsjs"
)

const benchBatch = 64

// BenchmarkReceiveAck measures messages per second received and acked
// through the Source (bounded fetch), against a bare nats.go loop of
// Fetch(batch) and Ack on the same embedded server, each on its own
// stream pre-filled with b.N messages. The _sync variants wait for the
// server to confirm each ack (Config.AckSync, DoubleAck).
func BenchmarkReceiveAck(b *testing.B) {
	srv, err := natsjs.StartServer(natsjs.EmbeddedConfig{StoreDir: b.TempDir(), Port: natsjs.RandomPort}, nil)
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
func prefill(b *testing.B, url string, n int, sync bool) natsjs.Config {
	b.Helper()
	cfg := uniqueConfig(url)
	cfg.AckSync = sync
	cfg.FetchWait = time.Second
	s, err := natsjs.Open(context.Background(), cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	data := []byte(`{"type":"bench","method":"GET","path":"/x"}`)
	for i := range n {
		if _, err := s.JetStream().PublishAsync(cfg.Subjects[0], data); err != nil {
			b.Fatal(err)
		}
		if i%1024 == 1023 {
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
	drain := sourceLoop(b, prefill(b, url, b.N, sync))
	b.ResetTimer()
	drain(b.N)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

func benchBare(b *testing.B, url string, sync bool) {
	drain := bareLoop(b, prefill(b, url, b.N, sync), sync)
	b.ResetTimer()
	drain(b.N)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkReceiveAckRatio alternates the two loops, round by round, on
// streams of benchRound messages each, so that both see the same load on a
// shared machine; it reports each one's rate and source/bare, the ratio of
// the Source's throughput to the bare loop's (target >= 0.8).
func BenchmarkReceiveAckRatio(b *testing.B) {
	const benchRound = 5000
	srv, err := natsjs.StartServer(natsjs.EmbeddedConfig{StoreDir: b.TempDir(), Port: natsjs.RandomPort}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Shutdown()
	var bare, source time.Duration
	for range b.N {
		b.StopTimer()
		drainBare := bareLoop(b, prefill(b, srv.ClientURL(), benchRound, false), false)
		drainSource := sourceLoop(b, prefill(b, srv.ClientURL(), benchRound, false))
		b.StartTimer()
		start := time.Now()
		drainBare(benchRound)
		bare += time.Since(start)
		start = time.Now()
		drainSource(benchRound)
		source += time.Since(start)
	}
	n := float64(b.N * benchRound)
	b.ReportMetric(n/bare.Seconds(), "bare_msgs/s")
	b.ReportMetric(n/source.Seconds(), "source_msgs/s")
	b.ReportMetric(bare.Seconds()/source.Seconds(), "source/bare")
}

// sourceLoop opens a Source on cfg's queue and returns a function that
// receives and acks n messages through it, then flushes the acks.
func sourceLoop(b *testing.B, cfg natsjs.Config) func(n int) {
	s, err := natsjs.Open(context.Background(), cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	return func(n int) {
		for done := 0; done < n; {
			msgs, err := s.Receive(ctx, min(benchBatch, n-done))
			if err != nil {
				b.Fatal(err)
			}
			for _, m := range msgs {
				if err := m.Ack(ctx); err != nil {
					b.Fatal(err)
				}
			}
			done += len(msgs)
		}
		if err := s.Conn().Flush(); err != nil {
			b.Fatal(err)
		}
	}
}

// bareLoop connects with nats.go alone and returns a function that
// fetches and acks n messages, then flushes the acks.
func bareLoop(b *testing.B, cfg natsjs.Config, sync bool) func(n int) {
	jsc := jsclient.Connect(b, cfg.URL)
	ctx := context.Background()
	cons, err := jsc.Consumer(ctx, cfg.Stream, cfg.Consumer)
	if err != nil {
		b.Fatal(err)
	}
	return func(n int) {
		for done := 0; done < n; {
			batch, err := cons.Fetch(min(benchBatch, n-done), jetstream.FetchMaxWait(time.Second))
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
				done++
			}
			if err := batch.Error(); err != nil {
				b.Fatal(fmt.Errorf("fetch: %w", err))
			}
		}
		if err := jsc.Conn().Flush(); err != nil {
			b.Fatal(err)
		}
	}
}
