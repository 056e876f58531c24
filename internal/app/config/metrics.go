package config

import (
	"net"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/field"
)

// Addresses of metrics.listen.
const (
	DefaultOpsListen = "127.0.0.1:9464"
	OpsListenOff     = "off"
)

// Metrics is the `metrics:` section: the runtime endpoints (/metrics,
// /healthz, /readyz and /debug/pprof).
type Metrics struct {
	// Listen is the host:port of the runtime endpoints, or "off". The
	// default is loopback only; a Prometheus server on another host needs
	// an explicit address such as 0.0.0.0:9464.
	Listen string `yaml:"listen" doc:"host:port of the runtime endpoints, or off. The default listens on loopback only; a Prometheus server on another host needs an address such as 0.0.0.0:9464."`
	// Pprof serves /debug/pprof on the same address. Default false.
	Pprof bool `yaml:"pprof" doc:"Serve /debug/pprof on the same address."`
}

// DefaultTargetUnreadyAfter is ops.target_unready_after's default.
const DefaultTargetUnreadyAfter = time.Minute

// Ops is the `ops:` section: how the runtime endpoints judge the worker.
type Ops struct {
	// TargetUnreadyAfter: /readyz reports not ready once every call to
	// the target has failed (no answer, or a 5xx) for this long; 0 turns
	// the check off. Default 60s.
	TargetUnreadyAfter time.Duration `yaml:"target_unready_after" doc:"/readyz is not ready once every call to the target has failed (no answer, or a 5xx) for this long; 0s turns the check off."`
}

// Check checks the section; paths are relative to it.
func (c Ops) Check() error {
	if c.TargetUnreadyAfter < 0 {
		return field.Invalid("target_unready_after", "must be >= 0 (0 turns the check off), got %s", c.TargetUnreadyAfter)
	}
	return nil
}

// Check checks the section; paths are relative to it.
func (c Metrics) Check() error {
	if c.Listen == OpsListenOff {
		return nil
	}
	host, port, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return field.Invalid("listen", "must be host:port or %q, got %q", OpsListenOff, c.Listen)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return field.Invalid("listen", "port must be a number from 0 to 65535, got %q", port)
	}
	if host != "" && net.ParseIP(host) == nil && !validHostname(host) {
		return field.Invalid("listen", "host must be an IP address or a host name, got %q", host)
	}
	return nil
}

func validHostname(h string) bool {
	if len(h) > 253 {
		return false
	}
	for _, r := range h {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
		default:
			return false
		}
	}
	return true
}
