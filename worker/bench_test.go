package worker_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/sinks/httpapi"
	"github.com/sluicehq/sluice/sources/natsjs"
	"github.com/sluicehq/sluice/worker"
)

// benchConcurrency is the worker's max_in_flight and the bare loop's fetch
// batch: both have as many requests in flight at most.
const benchConcurrency = 64

// BenchmarkDrainRatio measures the worker's overhead. Round by round, on a
// fresh stream of benchRound jobs each, it drains embedded JetStream into a
// local target that always answers 200: first with a bare loop (nats.go
// Fetch of 64, a POST per message from 64 goroutines, Ack), then with the
// worker (real JetStream source, HTTP sink and a disabled limiter, 64 in
// flight). It reports both rates and worker/bare, the ratio of the worker's
// throughput to the bare loop's (target >= 0.7).
func BenchmarkDrainRatio(b *testing.B) {
	const benchRound = 3000
	srv, err := natsjs.StartServer(natsjs.EmbeddedConfig{StoreDir: b.TempDir(), Port: natsjs.RandomPort}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Shutdown()
	var hits atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		hits.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer target.Close()

	var bare, work time.Duration
	for round := range b.N {
		b.StopTimer()
		bareCfg := prefill(b, srv.ClientURL(), fmt.Sprint("B", round), benchRound)
		workCfg := prefill(b, srv.ClientURL(), fmt.Sprint("W", round), benchRound)
		b.StartTimer()

		hits.Store(0)
		start := time.Now()
		bareDrain(b, bareCfg, target.URL, benchRound)
		bare += time.Since(start)
		if n := hits.Load(); n != benchRound {
			b.Fatalf("bare loop: target saw %d requests, want %d", n, benchRound)
		}

		b.StopTimer()
		hits.Store(0)
		drain := workerDrain(b, workCfg, target.URL, benchRound, &hits)
		b.StartTimer()
		start = time.Now()
		drain()
		work += time.Since(start)
	}
	n := float64(b.N * benchRound)
	b.ReportMetric(n/bare.Seconds(), "bare_jobs/s")
	b.ReportMetric(n/work.Seconds(), "worker_jobs/s")
	b.ReportMetric(bare.Seconds()/work.Seconds(), "worker/bare")
}

// prefill creates a stream and consumer named after name and publishes n
// jobs to it.
func prefill(b *testing.B, url, name string, n int) natsjs.Config {
	b.Helper()
	cfg := natsjs.Config{
		URL:       url,
		Stream:    "BENCH_" + name,
		Subjects:  []string{"bench." + name + ".jobs"},
		Consumer:  "bench",
		Setup:     true,
		FetchWait: time.Second,
	}
	s, err := natsjs.Open(context.Background(), cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	js := s.JetStream()
	for i := range n {
		data := fmt.Appendf(nil, `{"id":"j%d","path":"/items/%d","body":{"n":%d}}`, i, i, i)
		if _, err := js.PublishAsync(cfg.Subjects[0], data); err != nil {
			b.Fatal(err)
		}
		if i%1024 == 1023 {
			<-js.PublishAsyncComplete()
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		b.Fatal("prefill not acked")
	}
	return cfg
}

// bareDrain is the baseline: fetch a batch, POST every message at once,
// ack each after its response.
func bareDrain(b *testing.B, cfg natsjs.Config, target string, n int) {
	nc, err := nats.Connect(cfg.URL)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	jsc, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	cons, err := jsc.Consumer(context.Background(), cfg.Stream, cfg.Consumer)
	if err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchConcurrency, MaxConnsPerHost: benchConcurrency}}
	defer client.CloseIdleConnections()
	for done := 0; done < n; {
		batch, err := cons.Fetch(min(benchConcurrency, n-done), jetstream.FetchMaxWait(time.Second))
		if err != nil {
			b.Fatal(err)
		}
		var wg sync.WaitGroup
		for m := range batch.Messages() {
			done++
			wg.Go(func() {
				resp, err := client.Post(target+"/items", "application/json", bytes.NewReader(m.Data()))
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err := m.Ack(); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		if err := batch.Error(); err != nil {
			b.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		b.Fatal(err)
	}
}

// workerDrain sets a worker up and returns a function that runs it until
// the target has seen n requests and the worker has settled every job.
func workerDrain(b *testing.B, cfg natsjs.Config, target string, n int, hits *atomic.Int64) func() {
	src, err := natsjs.Open(context.Background(), cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { src.Close() })
	sink, err := httpapi.New(httpapi.Config{BaseURL: target, MaxConns: benchConcurrency})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sink.Close() })
	lcfg := limiter.DefaultConfig()
	lcfg.Disabled = true
	lim, err := limiter.New(lcfg)
	if err != nil {
		b.Fatal(err)
	}
	w, err := worker.New(worker.Config{MaxInFlight: benchConcurrency}, worker.Deps{Source: src, Target: sink, Limiter: lim})
	if err != nil {
		b.Fatal(err)
	}
	return func() {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		for hits.Load() < int64(n) {
			time.Sleep(time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		if err := src.Conn().Flush(); err != nil {
			b.Fatal(err)
		}
		if got := hits.Load(); got != int64(n) {
			b.Fatalf("worker: target saw %d requests, want %d", got, n)
		}
	}
}
