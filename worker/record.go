package worker

import (
	"encoding/base64"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/call"
)

// DeadLetter is the record published for a job that is given up. It holds
// what is needed to understand the failure and to enqueue the job again
// (`sluice dlq replay`): the original payload and message headers.
type DeadLetter struct {
	ID     string `json:"id"`
	Type   string `json:"type,omitempty"`
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
	// Status is the last HTTP status, 0 when there was none.
	Status      int    `json:"status"`
	BodyExcerpt string `json:"body_excerpt,omitempty"`
	Attempts    int    `json:"attempts"`   // calls to the target in this delivery
	Deliveries  int    `json:"deliveries"` // the message's delivery count
	// FirstAt is when this delivery was received; LastAt when the job was
	// given up.
	FirstAt time.Time `json:"first_at"`
	LastAt  time.Time `json:"last_at"`
	Worker  string    `json:"worker"`
	// Payload is the original message payload when it is valid UTF-8,
	// else PayloadBase64 holds it. PayloadTruncated says it was cut (an
	// oversized envelope keeps only its first bytes).
	Payload          string            `json:"payload,omitempty"`
	PayloadBase64    string            `json:"payload_base64,omitempty"`
	PayloadTruncated bool              `json:"payload_truncated,omitempty"`
	Headers          map[string]string `json:"headers,omitempty"` // the message's headers
}

// Data returns the original payload held by the record.
func (d DeadLetter) Data() ([]byte, error) {
	if d.PayloadBase64 != "" {
		return base64.StdEncoding.DecodeString(d.PayloadBase64)
	}
	return []byte(d.Payload), nil
}

func (d *DeadLetter) setPayload(p []byte, limit int) {
	if len(p) > limit {
		p, d.PayloadTruncated = p[:limit], true
	}
	if utf8.Valid(p) {
		d.Payload = string(p)
	} else {
		d.PayloadBase64 = base64.StdEncoding.EncodeToString(p)
	}
}

// Result is the record published for a job that succeeded.
type Result struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Status int    `json:"status"`
	// Headers are the response headers named in Config.ResultHeaders.
	Headers map[string]string `json:"headers,omitempty"`
	// Body is the (capped) response body when it is valid UTF-8, else
	// BodyBase64 holds it.
	Body       string `json:"body,omitempty"`
	BodyBase64 string `json:"body_base64,omitempty"`
	// BodyTruncated says the body was cut for the record to fit its
	// output (a NATS server's max_payload).
	BodyTruncated bool `json:"body_truncated,omitempty"`
}

func newResult(job Job, resp call.Response, names []string) Result {
	r := Result{ID: job.ID, Type: job.Type, Status: resp.Status}
	for _, n := range names {
		if v := resp.Header.Get(n); v != "" {
			if r.Headers == nil {
				r.Headers = make(map[string]string, len(names))
			}
			r.Headers[http.CanonicalHeaderKey(n)] = v
		}
	}
	r.setBody(resp.Body)
	return r
}

// setBody sets Body to b when it is valid UTF-8, else BodyBase64.
func (r *Result) setBody(b []byte) {
	r.Body, r.BodyBase64 = "", ""
	if utf8.Valid(b) {
		r.Body = string(b)
	} else {
		r.BodyBase64 = base64.StdEncoding.EncodeToString(b)
	}
}

// excerpt returns the first n bytes of b as valid UTF-8.
func excerpt(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
