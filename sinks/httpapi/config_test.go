package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/sinks/httpapi"
)

func TestConfigValidate(t *testing.T) {
	ok := []httpapi.Config{
		{BaseURL: "http://127.0.0.1:8080"},
		{BaseURL: "https://api.example/v2/", Timeout: time.Second, MaxResponseBytes: 10, MaxConns: 4,
			Headers: map[string]string{"Authorization": "Bearer x"}, AllowJobHeaders: []string{"Authorization", "X-Other"}},
	}
	for _, c := range ok {
		if err := c.Validate(); err != nil {
			t.Errorf("Validate(%v) = %v", c, err)
		}
	}
	tests := []struct {
		c    httpapi.Config
		want string
	}{
		{httpapi.Config{}, "base_url: required"},
		{httpapi.Config{BaseURL: "127.0.0.1:8080"}, "base_url: must be an absolute http or https URL"},
		{httpapi.Config{BaseURL: "ftp://x/"}, "base_url: must be an absolute http or https URL"},
		{httpapi.Config{BaseURL: "http:///x"}, "base_url: must name a host"},
		{httpapi.Config{BaseURL: "http://u:hunter2@x/"}, "base_url: must not carry user info"},
		{httpapi.Config{BaseURL: "http://x/?a=1"}, "base_url: must have no query"},
		{httpapi.Config{BaseURL: "http://x/#f"}, "base_url: must have no fragment"},
		{httpapi.Config{BaseURL: `http://x/a\b`}, "base_url: must not contain"},
		{httpapi.Config{BaseURL: "http://x", Timeout: -1}, "timeout: must be >= 0, got -1ns"},
		{httpapi.Config{BaseURL: "http://x", MaxResponseBytes: -1}, "max_response_bytes: must be >= 0, got -1"},
		{httpapi.Config{BaseURL: "http://x", MaxConns: -2}, "max_conns: must be >= 0, got -2"},
		{httpapi.Config{BaseURL: "http://x", Headers: map[string]string{"Bad Name": "v"}}, `headers: must be a valid header name, got "Bad Name"`},
		{httpapi.Config{BaseURL: "http://x", Headers: map[string]string{"X-Key": "hunter2\r\nX: y"}}, "headers.X-Key: must be a valid header value"},
		{httpapi.Config{BaseURL: "http://x", Headers: map[string]string{"host": "other"}}, "headers.host: must be a header the client does not set itself"},
		{httpapi.Config{BaseURL: "http://x", AllowJobHeaders: []string{"Host"}}, `allow_job_headers[0]: must be a header that does not control`},
		{httpapi.Config{BaseURL: "http://x", AllowJobHeaders: []string{"ok", "transfer-encoding"}}, `allow_job_headers[1]`},
		{httpapi.Config{BaseURL: "http://x", ResponseHeaders: []string{"a b"}}, `response_headers[0]`},
		{httpapi.Config{BaseURL: "http://x", UserAgent: "a\nb"}, `user_agent`},
		{httpapi.Config{BaseURL: "http://x", Classifier: call.Classifier{ThrottleStatuses: []int{1}}}, `throttle_statuses[0]`},
	}
	for _, tt := range tests {
		err := tt.c.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%v) = %v; want %q", tt.c, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Validate echoes a secret: %v", err)
		}
		if _, nerr := httpapi.New(tt.c); nerr == nil {
			t.Errorf("New(%v) accepted an invalid config", tt.c)
		}
	}
}

func TestConfigRedacts(t *testing.T) {
	const secret = "s3cr3t-token-value"
	c := httpapi.Config{BaseURL: "http://127.0.0.1:1", Headers: map[string]string{"Authorization": "Bearer " + secret, "X-Key": secret}}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})).Info("config", "target", c)
	slog.New(slog.NewTextHandler(&logs, nil)).Info("config", "target", c)
	outs := []string{fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s", c, c, c, c), logs.String()}
	for _, out := range outs {
		if strings.Contains(out, secret) {
			t.Errorf("secret printed: %s", out)
		}
		if !strings.Contains(out, "Authorization") || !strings.Contains(out, "[redacted]") {
			t.Errorf("header names should be shown with redacted values: %s", out)
		}
	}

	// Debug logs of calls never hold header values.
	target := newRecorder(t, nil)
	c.BaseURL = target.URL
	var calls bytes.Buffer
	s := newSink(t, c, httpapi.WithLogger(slog.New(slog.NewJSONHandler(&calls, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	if _, err := s.Send(context.Background(), call.Request{Path: "/x?token=" + secret, Header: http.Header{"X-Job": {secret}}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(calls.String(), `"path":"/[redacted]"`) || strings.Contains(calls.String(), secret) {
		t.Errorf("call log: %s", calls.String())
	}
}

// TestBaseURLCredentialsNotShown: a base URL with user info is refused
// without a byte of the password, whether or not it parses.
func TestBaseURLCredentialsNotShown(t *testing.T) {
	const secret = "pw_SECRET"
	for _, u := range []string{
		"https://admin:" + secret + "%zz@api.example.com/v1",
		"https://admin:" + secret + "@api.example.com/v1",
		"ftp://admin:" + secret + "@api.example.com/v1",
		"https://admin:" + secret + "@/v1",
		"https://admin:" + secret + "\x7f@api.example.com/v1",
	} {
		err := httpapi.Config{BaseURL: u}.Validate()
		if _, nerr := httpapi.New(httpapi.Config{BaseURL: u}); err == nil || nerr == nil {
			t.Errorf("%q: Validate %v, New %v; want errors", u, err, nerr)
			continue
		}
		_, nerr := httpapi.New(httpapi.Config{BaseURL: u})
		for _, e := range []error{err, nerr} {
			if strings.Contains(e.Error(), secret) || strings.Contains(e.Error(), "zz") {
				t.Errorf("%q: %v: shows the password", u, e)
			}
		}
	}
}
