package web

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"time"
)

//go:embed static
var static embed.FS

// Assets returns the embedded files of both pages (HTML, CSS, JavaScript),
// rooted at the static folder.
func Assets() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil { // the folder is embedded above
		panic(err)
	}
	return sub
}

// securityHeaders are set on every response: the pages load nothing but
// their own files and talk to nothing but their own server.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
}

// page serves one embedded HTML file.
func page(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := fs.ReadFile(Assets(), name)
		if err != nil {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		securityHeaders(w.Header())
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(b)
	}
}

// files serves the embedded assets under the prefix the mux strips.
func files() http.Handler {
	fsrv := http.FileServerFS(Assets())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w.Header())
		w.Header().Set("Cache-Control", "no-cache")
		fsrv.ServeHTTP(w, r)
	})
}

// eventStream writes Server-Sent Events to one client.
type eventStream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// newEventStream sends the headers of an event stream; retry is the delay
// the browser waits before it reconnects.
func newEventStream(w http.ResponseWriter, retry time.Duration) (*eventStream, error) {
	h := w.Header()
	securityHeaders(h)
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &eventStream{w: w, rc: http.NewResponseController(w)}
	if _, err := fmt.Fprintf(w, "retry: %d\n\n", retry.Milliseconds()); err != nil {
		return nil, err
	}
	return s, s.rc.Flush()
}

// send writes one event whose data is v as JSON, and flushes it.
func (s *eventStream) send(event string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("web: %s event: %w", event, err)
	}
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", event, b); err != nil {
		return err
	}
	return s.rc.Flush()
}

// num is a float64 that encodes NaN and ±Inf as JSON null.
type num float64

func (n num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(f)
}

// round3 rounds to 3 decimals, to keep frames short.
func round3(v float64) num {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return num(v)
	}
	return num(math.Round(v*1000) / 1000)
}
