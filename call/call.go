package call

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/sluicehq/sluice/field"
)

// Request is one call to the target API, built by the worker from a job and
// its type's defaults.
type Request struct {
	// ID is the job's id, stable across redeliveries: the target logs it
	// and may send it as an idempotency key. "" for none.
	ID string
	// Method is the HTTP method; "" means GET.
	Method string
	// Path is relative to the target's base URL, with an optional query:
	// "/users/7?fields=name". The target decides what it refuses.
	Path string
	// Header holds the job's headers.
	Header http.Header
	// Body is sent as is.
	Body []byte
}

// Response is what a call to the target gave.
type Response struct {
	Status    int         // 0 when no response arrived
	Header    http.Header // the response headers the target keeps
	Body      []byte      // capped by the target
	Truncated bool        // the body was longer than Body
	Latency   time.Duration
	Outcome   Outcome
}

// ErrInvalidRequest is wrapped by the error of a request that cannot be
// made on the target (a path that would leave it, a header that cannot be
// sent). Such a request is never sent and retrying cannot help: the worker
// dead-letters its job with the reason invalid_request.
var ErrInvalidRequest = errors.New("invalid request")

// StatusError is the error of a response with a status of 400 or more. The
// call was made: its Response carries the status and the Outcome.
type StatusError struct {
	Code       int
	RetryAfter time.Duration // from the classifier; 0 when the response gave none
	Body       []byte        // an excerpt of the body, credentials redacted
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("call: target answered %d %s", e.Code, http.StatusText(e.Code))
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry after %v)", e.RetryAfter)
	}
	return strings.TrimSpace(msg)
}

// maxMethodBytes bounds a method: no real method comes near it.
const maxMethodBytes = 32

// CheckMethod reports, as a *field.Error at name, a method that is not an
// HTTP token (RFC 9110, 5.6.2) of at most 32 bytes; nil if m is one.
func CheckMethod(name, m string) *field.Error {
	if len(m) > maxMethodBytes || !httpguts.ValidHeaderFieldName(m) { // a method is a token, like a header name
		return field.Invalid(name, "must be an HTTP method such as POST, got %s", quote(m))
	}
	return nil
}

// CheckPath reports, as a *field.Error at name, a value that is not an
// absolute path on the target: it must start with a single "/" and hold no
// space, control character or backslash, so that joining it to a base URL
// cannot change the scheme, host or port. nil if p is such a path. (The
// HTTP target checks more before it sends: see sinks/httpapi.)
func CheckPath(name, p string) *field.Error {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") {
		return field.Invalid(name, `must be a path starting with a single "/", got %s`, quote(p))
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c == 0x7f || c == '\\' {
			return field.Invalid(name, "must not hold spaces, control characters or backslashes, got %s", quote(p))
		}
	}
	return nil
}

// quote shortens s for an error message.
func quote(s string) string {
	const max = 256
	if len(s) > max {
		return fmt.Sprintf("%q...", s[:max])
	}
	return fmt.Sprintf("%q", s)
}
