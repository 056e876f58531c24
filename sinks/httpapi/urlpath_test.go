package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/sinks/httpapi"
)

// The path of the target's URLs is secret by default: webhook and bot URLs
// carry tokens in it. It appears in no log line, error, Config string or
// echoed body unless LogURLPath says it is not secret (#15).
func TestURLPathNotLogged(t *testing.T) {
	const token = "T0KEN-in-the-path-123456" // in base_url's path
	const jobToken = "job-T0KEN-98765"       // in the job's path
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "bad request to %s", r.URL.Path)
	}))
	defer echo.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	goneURL := gone.URL
	gone.Close()

	for _, showPath := range []bool{false, true} {
		var logs bytes.Buffer
		log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		var out []string
		for _, base := range []string{echo.URL, goneURL} {
			c := httpapi.Config{BaseURL: base + "/hooks/" + token, LogURLPath: showPath}
			s := newSink(t, c, httpapi.WithLogger(log))
			res, err := s.Send(context.Background(), call.Request{Path: "/send/" + jobToken})
			if err == nil {
				t.Fatalf("base %s: no error", base)
			}
			log.Info("config", "target", c)
			if !showPath && strings.Contains(string(res.Body), token) {
				t.Errorf("LogURLPath %v: the base path's token is in the body kept for the dead letter: %s", showPath, res.Body)
			}
			out = append(out, err.Error(), fmt.Sprint(c), fmt.Sprintf("%#v", c))
		}
		out = append(out, logs.String())
		all := strings.Join(out, "\n")
		switch {
		case !showPath && (strings.Contains(all, token) || strings.Contains(all, jobToken)):
			t.Errorf("the path's token was printed:\n%s", all)
		case !showPath && !strings.Contains(all, "/[redacted]"):
			t.Errorf("want /[redacted] in place of paths:\n%s", all)
		case showPath && !strings.Contains(logs.String(), "/hooks/"+token+"/send/"+jobToken):
			t.Errorf("LogURLPath: want the path in the call logs:\n%s", logs.String())
		}
	}
}
