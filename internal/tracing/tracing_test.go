package tracing_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/field"
	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/internal/tracing/otlptest"
)

func TestValidate(t *testing.T) {
	for _, ok := range []string{"", "http://otel-collector:4318", "https://collector.example/base/"} {
		if err := (tracing.Config{OTLPEndpoint: ok}).Validate(); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"otel-collector:4318", "ftp://x", "http://", "http://x/?q=1", "http://u:secret@x"} {
		err := (tracing.Config{OTLPEndpoint: bad}).Validate()
		var fe *field.Error
		if !errors.As(err, &fe) || fe.Field != "otlp_endpoint" {
			t.Errorf("%q: got %v, want a field error at otlp_endpoint", bad, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: the error shows the password: %v", bad, err)
		}
	}
}

func TestEnabled(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	tests := []struct {
		name string
		cfg  tracing.Config
		env  map[string]string
		want bool
	}{
		{"nothing", tracing.Config{}, nil, false},
		{"file", tracing.Config{OTLPEndpoint: "http://c:4318"}, nil, true},
		{"env", tracing.Config{}, map[string]string{tracing.EnvEndpoint: "http://c:4318"}, true},
		{"traces env", tracing.Config{}, map[string]string{tracing.EnvTracesEndpoint: "http://c:4318/v1/traces"}, true},
		{"disabled", tracing.Config{OTLPEndpoint: "http://c:4318"}, map[string]string{tracing.EnvSDKDisabled: "true"}, false},
		{"not disabled", tracing.Config{OTLPEndpoint: "http://c:4318"}, map[string]string{tracing.EnvSDKDisabled: "false"}, true},
	}
	for _, tt := range tests {
		if got := tracing.Enabled(tt.cfg, env(tt.env)); got != tt.want {
			t.Errorf("%s: Enabled = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestNewOff: with no endpoint there is no provider and no tracer.
func TestNewOff(t *testing.T) {
	t.Setenv(tracing.EnvEndpoint, "")
	t.Setenv(tracing.EnvTracesEndpoint, "")
	tp, err := tracing.New(context.Background(), tracing.Config{}, "v1")
	if err != nil || tp != nil || tracing.Tracer(tp) != nil {
		t.Fatalf("New = %v, %v; want no provider", tp, err)
	}
}

// TestExportFromFileAndEnv: spans reach a receiver named by the config, and
// the environment's endpoint wins over the config's.
func TestExportFromFileAndEnv(t *testing.T) {
	for _, viaEnv := range []bool{false, true} {
		rcv := otlptest.NewReceiver()
		defer rcv.Close()
		cfg := tracing.Config{OTLPEndpoint: rcv.URL}
		t.Setenv(tracing.EnvEndpoint, "")
		t.Setenv(tracing.EnvTracesEndpoint, "")
		t.Setenv("OTEL_SERVICE_NAME", "")
		if viaEnv {
			cfg.OTLPEndpoint = "http://127.0.0.1:1" // nothing listens: the env must win
			t.Setenv(tracing.EnvEndpoint, rcv.URL)
		}
		tp, err := tracing.New(context.Background(), cfg, "v1.2.3")
		if err != nil {
			t.Fatal(err)
		}
		_, span := tracing.Tracer(tp).Start(context.Background(), "s")
		span.End()
		if err := tp.Shutdown(context.Background()); err != nil {
			t.Fatalf("shutdown (exports the batch): %v", err)
		}
		spans := rcv.Spans()
		if len(spans) != 1 || spans[0].Name != "s" || spans[0].Service != "sluice" {
			t.Fatalf("env %v: received %+v, want one span s of service sluice", viaEnv, spans)
		}
	}
}
