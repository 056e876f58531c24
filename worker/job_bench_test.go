package worker_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/sinks/httpapi"
	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/worker"
)

// BenchmarkJob measures one job's path through the worker, as `make flood`
// drives it but without a network or a queue server: a source that hands
// out ready messages (ack is a counter), the worker with its metrics
// registered and no tracer (as `sluice run` without an exporter), and a
// target that answers 200 at once. One op is one job, received, decoded,
// sent and acked; allocs/op are the worker's and the target's per job.
//
//   - target=memory: a Target that answers without HTTP, the worker alone;
//   - target=httpapi: the HTTP sink (Idempotency-Key, trace context,
//     classification) over an http.RoundTripper that answers in memory.
//
// The limiter is left out (nil): its Wait has a benchmark of its own.
func BenchmarkJob(b *testing.B) {
	b.Run("target=memory", func(b *testing.B) {
		benchJobs(b, memTarget{})
	})
	b.Run("target=httpapi", func(b *testing.B) {
		sink, err := httpapi.New(httpapi.Config{BaseURL: "http://target.test", IdempotencyHeader: httpapi.DefaultIdempotencyHeader},
			httpapi.WithMiddleware(func(http.RoundTripper) http.RoundTripper { return okTransport{} }))
		if err != nil {
			b.Fatal(err)
		}
		benchJobs(b, sink)
	})
}

// benchJobs drains b.N jobs through a worker into target.
func benchJobs(b *testing.B, target worker.Target) {
	const maxInFlight = 256 // as make flood
	src := newJobSource(b.N)
	reg := prometheus.NewRegistry()
	m := worker.NewMetrics()
	reg.MustRegister(m)
	w, err := worker.New(worker.Config{
		ID:          "bench",
		MaxInFlight: maxInFlight,
		Jobs:        worker.JobsConfig{Types: map[string]worker.JobType{"default": {Method: http.MethodPost, Path: "/jobs", Cost: 1}}},
	}, worker.Deps{Source: src, Target: target, Metrics: m})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	b.ResetTimer()
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	<-src.done
	b.StopTimer()
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	if got := w.Stats().Jobs[worker.OutcomeSucceeded]; got != int64(b.N) {
		b.Fatalf("%d jobs succeeded, want %d", got, b.N)
	}
}

// jobSource hands out n messages shaped like the flood's jobs, then
// blocks until the context ends.
type jobSource struct {
	n, next int
	acked   atomic.Int64
	done    chan struct{}
	// payloads are reused: decoding copies what it keeps.
	payloads [][]byte
	ids      []string
}

func newJobSource(n int) *jobSource {
	s := &jobSource{n: n, done: make(chan struct{})}
	for i := range 1024 {
		id := fmt.Sprintf("job-%07d", i)
		s.ids = append(s.ids, id)
		s.payloads = append(s.payloads, fmt.Appendf(nil, `{"id":%q,"headers":{"Sluice-Job-Id":%q},"body":{"n":%q}}`, id, id, id))
	}
	if n == 0 {
		close(s.done)
	}
	return s
}

// Receive is called by the worker's Run goroutine only.
func (s *jobSource) Receive(ctx context.Context, max int) ([]sources.Message, error) {
	k := min(max, s.n-s.next)
	if k == 0 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	msgs := make([]sources.Message, k)
	for i := range msgs {
		j := s.next % len(s.ids)
		msgs[i] = &jobMessage{src: s, id: s.ids[j], data: s.payloads[j], headers: map[string]string{"Nats-Msg-Id": s.ids[j]}}
		s.next++
	}
	return msgs, nil
}

type jobMessage struct {
	src     *jobSource
	id      string
	data    []byte
	headers map[string]string
}

func (m *jobMessage) ID() string                 { return m.id }
func (m *jobMessage) Data() []byte               { return m.data }
func (m *jobMessage) Headers() map[string]string { return m.headers }
func (m *jobMessage) DeliveryCount() int         { return 1 }
func (m *jobMessage) Ack(context.Context) error {
	if m.src.acked.Add(1) == int64(m.src.n) {
		close(m.src.done)
	}
	return nil
}
func (m *jobMessage) Nak(context.Context, time.Duration) error { return nil }
func (m *jobMessage) Term(context.Context, string) error       { return nil }
func (m *jobMessage) InProgress(context.Context) error         { return nil }

// memTarget answers every request 200 with no body.
type memTarget struct{}

func (memTarget) Send(_ context.Context, req call.Request) (call.Response, error) {
	return call.Response{Status: http.StatusOK, Outcome: call.Outcome{Kind: call.Success}}, nil
}

// okTransport answers every request 200 with an empty body, after reading
// the request's.
type okTransport struct{}

func (okTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Length": {"0"}}, Body: http.NoBody, ContentLength: 0, Request: r}, nil
}
