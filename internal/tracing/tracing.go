// Package tracing builds the OpenTelemetry tracer that sluice records its
// job and attempt spans with, exported over OTLP/HTTP (protobuf).
//
// Tracing is on when an endpoint is configured: Config.OTLPEndpoint (the
// file's observability.otlp_endpoint) or the standard environment
// variables OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// which take precedence over the file as every environment override does.
// OTEL_SDK_DISABLED=true turns it off. When it is off, New returns a nil
// provider: no exporter, no span is recorded, and the worker still
// propagates trace context to the target (see package worker).
//
// The other standard variables apply as the OpenTelemetry SDK defines them:
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the service name defaults
// to "sluice"), OTEL_TRACES_SAMPLER (default parentbased_always_on),
// OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TIMEOUT, and the
// certificate variables.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/field"
)

// TracesPath is appended to an endpoint to give the URL spans are posted to,
// as the OTLP specification does for OTEL_EXPORTER_OTLP_ENDPOINT.
const TracesPath = "/v1/traces"

// Environment variables read by Enabled.
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
)

// Config is the observability section of the config file.
type Config struct {
	// OTLPEndpoint is the base URL of an OTLP/HTTP receiver, such as an
	// OpenTelemetry Collector ("http://otel-collector:4318"); spans are
	// posted to it under /v1/traces. Empty: tracing is off unless the
	// environment names an endpoint.
	OTLPEndpoint string `yaml:"otlp_endpoint" doc:"Base URL of an OTLP/HTTP receiver (spans go to /v1/traces under it), such as http://otel-collector:4318. Empty: no spans, unless OTEL_EXPORTER_OTLP_ENDPOINT is set, which replaces this."`
}

// Validate checks OTLPEndpoint: empty, or an absolute http or https URL with
// a host and no query or fragment.
func (c Config) Validate() error {
	if c.OTLPEndpoint == "" {
		return nil
	}
	u, err := url.Parse(c.OTLPEndpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return field.Invalid("otlp_endpoint", "must be an http or https URL such as http://otel-collector:4318, got %q", redactURL(c.OTLPEndpoint))
	}
	if u.User != nil {
		return field.Invalid("otlp_endpoint", "must not carry user info; set OTEL_EXPORTER_OTLP_HEADERS for credentials")
	}
	return nil
}

// redactURL drops what may be a credential from a URL shown in an error.
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		u.User = url.User("redacted")
		return u.String()
	}
	return s
}

// Enabled reports whether spans are exported: an endpoint is configured in
// cfg or the environment (getenv, os.Getenv when nil), and the SDK is not
// disabled.
func Enabled(cfg Config, getenv func(string) string) bool {
	if getenv == nil {
		getenv = os.Getenv
	}
	if off, _ := strconv.ParseBool(strings.TrimSpace(getenv(EnvSDKDisabled))); off {
		return false
	}
	return cfg.OTLPEndpoint != "" || getenv(EnvEndpoint) != "" || getenv(EnvTracesEndpoint) != ""
}

// New returns a tracer provider that batches spans and exports them over
// OTLP/HTTP, or nil when tracing is not enabled (see Enabled). version is
// the service.version resource attribute. Call the provider's Shutdown
// before the process exits: it exports the spans still batched.
func New(ctx context.Context, cfg Config, version string) (*sdktrace.TracerProvider, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !Enabled(cfg, nil) {
		return nil, nil
	}
	var opts []otlptracehttp.Option
	if os.Getenv(EnvEndpoint) == "" && os.Getenv(EnvTracesEndpoint) == "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimRight(cfg.OTLPEndpoint, "/")+TracesPath))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("tracing: otlp exporter: %w", err)
	}
	res, err := resource.Merge(
		resource.NewSchemaless(attribute.String("service.name", "sluice"), attribute.String("service.version", version)),
		resource.Environment(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

// Tracer returns the tracer sluice records its spans with, nil when tp is
// nil (tracing off).
func Tracer(tp *sdktrace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer("github.com/sluicehq/sluice")
}
