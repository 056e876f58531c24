package call_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/field"
)

func TestClassify(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	custom := call.Classifier{RetryAfterHeaders: []call.RetryAfterHeader{
		{Name: "x-ms-retry-after-ms", Unit: call.UnitMilliseconds},
		{Name: "X-RateLimit-Reset", Unit: call.UnitUnixTime},
		{Name: "RateLimit-Reset", Unit: call.UnitSeconds},
	}}
	tests := []struct {
		name   string
		c      call.Classifier
		status int
		h      http.Header
		want   call.Outcome
	}{
		{"200", call.Classifier{}, 200, nil, call.Outcome{Kind: call.Success, Status: 200}},
		{"204", call.Classifier{}, 204, nil, call.Outcome{Kind: call.Success, Status: 204}},
		{"302", call.Classifier{}, 302, nil, call.Outcome{Kind: call.Success, Status: 302}},
		{"success ignores Retry-After", call.Classifier{}, 200, hdr("Retry-After", "5"),
			call.Outcome{Kind: call.Success, Status: 200}},
		{"429 without wait", call.Classifier{}, 429, nil, call.Outcome{Kind: call.Throttle, Status: 429}},
		{"429 with Retry-After", call.Classifier{}, 429, hdr("Retry-After", "7"),
			call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: 7 * time.Second}},
		{"429 with HTTP-date", call.Classifier{}, 429, hdr("Retry-After", "Sun, 01 Mar 2026 12:00:10 GMT"),
			call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: 10 * time.Second}},
		{"429 with garbage Retry-After", call.Classifier{}, 429, hdr("Retry-After", "soon"),
			call.Outcome{Kind: call.Throttle, Status: 429}},
		{"429 with huge Retry-After", call.Classifier{}, 429, hdr("Retry-After", "1000000000000000000000"),
			call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: call.DefaultMaxRetryAfter, WaitBeyondCap: true}},
		{"503 with Retry-After", call.Classifier{}, 503, hdr("Retry-After", "3"),
			call.Outcome{Kind: call.Throttle, Status: 503, RetryAfter: 3 * time.Second}},
		{"503 with Retry-After 0", call.Classifier{}, 503, hdr("Retry-After", "0"),
			call.Outcome{Kind: call.Throttle, Status: 503}},
		{"503 without Retry-After", call.Classifier{}, 503, nil, call.Outcome{Kind: call.ServerError, Status: 503}},
		{"503 with garbage Retry-After", call.Classifier{}, 503, hdr("Retry-After", "-1"),
			call.Outcome{Kind: call.ServerError, Status: 503}},
		{"second Retry-After value valid", call.Classifier{}, 503, hdr("Retry-After", "x", "Retry-After", "4"),
			call.Outcome{Kind: call.Throttle, Status: 503, RetryAfter: 4 * time.Second}},
		{"500", call.Classifier{}, 500, nil, call.Outcome{Kind: call.ServerError, Status: 500}},
		{"500 keeps its Retry-After", call.Classifier{}, 500, hdr("Retry-After", "2"),
			call.Outcome{Kind: call.ServerError, Status: 500, RetryAfter: 2 * time.Second}},
		{"502", call.Classifier{}, 502, nil, call.Outcome{Kind: call.ServerError, Status: 502}},
		{"599", call.Classifier{}, 599, nil, call.Outcome{Kind: call.ServerError, Status: 599}},
		{"400", call.Classifier{}, 400, nil, call.Outcome{Kind: call.ClientError, Status: 400}},
		{"404", call.Classifier{}, 404, nil, call.Outcome{Kind: call.ClientError, Status: 404}},
		{"403 with Retry-After", call.Classifier{}, 403, hdr("Retry-After", "9"),
			call.Outcome{Kind: call.ClientError, Status: 403, RetryAfter: 9 * time.Second}},

		{"ms header first", custom, 429, hdr("x-ms-retry-after-ms", "1500", "Retry-After", "9"),
			call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: 1500 * time.Millisecond}},
		{"ms header makes 503 a throttle", custom, 503, hdr("X-Ms-Retry-After-Ms", "250"),
			call.Outcome{Kind: call.Throttle, Status: 503, RetryAfter: 250 * time.Millisecond}},
		{"invalid ms header falls through", custom, 429, hdr("x-ms-retry-after-ms", "-5", "Retry-After", "9"),
			call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: 9 * time.Second}},
		{"unix reset", custom, 429, hdr("X-RateLimit-Reset", "1772366460"),
			call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: time.Minute}},
		{"unix reset in the past", custom, 429, hdr("X-RateLimit-Reset", "1772366000", "Retry-After", "9"),
			call.Outcome{Kind: call.Throttle, Status: 429}},
		{"unix reset far away", custom, 429, hdr("X-RateLimit-Reset", "99999999999999999999"),
			call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: call.DefaultMaxRetryAfter, WaitBeyondCap: true}},
		{"unix reset with fraction", custom, 429, hdr("X-RateLimit-Reset", "1772366400.5"),
			call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: 500 * time.Millisecond}},
		{"delta-seconds reset", custom, 429, hdr("RateLimit-Reset", "30"),
			call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: 30 * time.Second}},
		{"order of configured headers", custom, 429, hdr("RateLimit-Reset", "30", "X-RateLimit-Reset", "1772366410"),
			call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: 10 * time.Second}},

		{"custom cap", call.Classifier{MaxRetryAfter: time.Minute}, 429, hdr("Retry-After", "3600"),
			call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: time.Minute, WaitBeyondCap: true}},
		{"custom cap on ms", call.Classifier{MaxRetryAfter: time.Second,
			RetryAfterHeaders: []call.RetryAfterHeader{{Name: "x-ms-retry-after-ms", Unit: call.UnitMilliseconds}}},
			429, hdr("x-ms-retry-after-ms", "1001"),
			call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: time.Second, WaitBeyondCap: true}},
		{"custom throttle statuses", call.Classifier{ThrottleStatuses: []int{429, 420}}, 420, nil,
			call.Outcome{Kind: call.Throttle, Status: 420}},
		{"no throttle statuses", call.Classifier{ThrottleStatuses: []int{}}, 429, nil,
			call.Outcome{Kind: call.ClientError, Status: 429}},
		{"custom statuses with wait", call.Classifier{ThrottleStatusesWithWait: []int{403}}, 403, hdr("Retry-After", "1"),
			call.Outcome{Kind: call.Throttle, Status: 403, RetryAfter: time.Second}},
		{"custom statuses with wait drop 503", call.Classifier{ThrottleStatusesWithWait: []int{403}}, 503, hdr("Retry-After", "1"),
			call.Outcome{Kind: call.ServerError, Status: 503, RetryAfter: time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.Classify(tt.status, tt.h, now); got != tt.want {
				t.Errorf("Classify(%d, %v) = %+v; want %+v", tt.status, tt.h, got, tt.want)
			}
		})
	}
}

func TestClassifyResponse(t *testing.T) {
	var c call.Classifier
	if got := c.ClassifyResponse(nil, errors.New("dial tcp: connection refused")); got != (call.Outcome{Kind: call.NetworkError}) {
		t.Errorf("error: got %+v", got)
	}
	if got := c.ClassifyResponse(nil, nil); got.Kind != call.NetworkError {
		t.Errorf("nil response: got %+v", got)
	}
	resp := &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {"2"}}}
	if got := c.ClassifyResponse(resp, nil); got != (call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: 2 * time.Second}) {
		t.Errorf("429: got %+v", got)
	}
	// A response that came with an error (a redirect policy failure) is
	// still a failure of the round trip.
	if got := c.ClassifyResponse(resp, errors.New("stopped after 10 redirects")); got.Kind != call.NetworkError {
		t.Errorf("response and error: got %+v", got)
	}
}

func TestClassifierValidate(t *testing.T) {
	if err := (call.Classifier{}).Validate(); err != nil {
		t.Errorf("zero value: %v", err)
	}
	good := call.Classifier{
		RetryAfterHeaders:        []call.RetryAfterHeader{{Name: "x-ms-retry-after-ms", Unit: call.UnitMilliseconds}},
		ThrottleStatuses:         []int{429},
		ThrottleStatusesWithWait: []int{503, 403},
		MaxRetryAfter:            time.Hour,
	}
	if err := good.Validate(); err != nil {
		t.Errorf("good: %v", err)
	}
	tests := []struct {
		c    call.Classifier
		want string
	}{
		{call.Classifier{RetryAfterHeaders: []call.RetryAfterHeader{{Name: ""}}}, `retry_after_headers[0].name: must be a valid header name, got ""`},
		{call.Classifier{RetryAfterHeaders: []call.RetryAfterHeader{{Name: "ok"}, {Name: "bad name"}}}, `retry_after_headers[1].name`},
		{call.Classifier{RetryAfterHeaders: []call.RetryAfterHeader{{Name: "a:b"}}}, `retry_after_headers[0].name`},
		{call.Classifier{RetryAfterHeaders: []call.RetryAfterHeader{{Name: "x", Unit: 7}}}, `retry_after_headers[0].unit: must be seconds, milliseconds or unix, got HeaderUnit(7)`},
		{call.Classifier{ThrottleStatuses: []int{429, 99}}, `throttle_statuses[1]: must be an HTTP status in [100, 599], got 99`},
		{call.Classifier{ThrottleStatusesWithWait: []int{600}}, `throttle_statuses_with_wait[0]: must be an HTTP status in [100, 599], got 600`},
		{call.Classifier{MaxRetryAfter: -time.Second}, `max_retry_after: must be >= 0, got -1s`},
	}
	for _, tt := range tests {
		err := tt.c.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Validate(%+v) = %v; want it to start with %q", tt.c, err, tt.want)
		}
		var fe *field.Error
		if !errors.As(err, &fe) {
			t.Errorf("Validate(%+v) = %v; want a *field.Error", tt.c, err)
		}
	}
}

func TestClassifyNeverPanics(t *testing.T) {
	now := time.Unix(1772366400, 0)
	c := call.Classifier{RetryAfterHeaders: []call.RetryAfterHeader{
		{Name: "A", Unit: call.UnitMilliseconds}, {Name: "B", Unit: call.UnitUnixTime}, {Name: "C", Unit: call.HeaderUnit(-3)},
	}}
	for _, v := range []string{"", "-1", "NaN", "1e400", "18446744073709551616", "9223372036854775807.999999999999", "\r\n", "Thu, 01 Jan 1970 00:00:00 GMT"} {
		for _, name := range []string{"A", "B", "C", "Retry-After"} {
			o := c.Classify(429, http.Header{name: {v}}, now)
			if o.RetryAfter < 0 || o.RetryAfter > call.DefaultMaxRetryAfter {
				t.Errorf("%s: %q: RetryAfter %v out of range", name, v, o.RetryAfter)
			}
		}
	}
}

func ExampleClassifier() {
	c := call.Classifier{RetryAfterHeaders: []call.RetryAfterHeader{
		{Name: "x-ms-retry-after-ms", Unit: call.UnitMilliseconds},
	}}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	h := http.Header{}
	h.Set("x-ms-retry-after-ms", "1500")
	h.Set("Retry-After", "9")
	o := c.Classify(http.StatusServiceUnavailable, h, now)
	fmt.Println(o.Kind, o.Status, o.RetryAfter)

	o = c.Classify(http.StatusServiceUnavailable, http.Header{}, now)
	fmt.Println(o.Kind, o.Status, o.RetryAfter)

	o = c.Classify(http.StatusNotFound, http.Header{}, now)
	fmt.Println(o.Kind, o.Status, o.RetryAfter)
	// Output:
	// throttle 503 1.5s
	// server_error 503 0s
	// client_error 404 0s
}

// A wait beyond the cap is marked (the limiter does not believe it); a
// wait at the cap is not.
func TestClassifyWaitBeyondCap(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		status int
		h      http.Header
		want   call.Outcome
	}{
		{"429 with Retry-After at the cap", 429, hdr("Retry-After", "86400"),
			call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: call.DefaultMaxRetryAfter}},
		{"429 with Retry-After a second over the cap", 429, hdr("Retry-After", "86401"),
			call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: call.DefaultMaxRetryAfter, WaitBeyondCap: true}},
		{"503 with a Retry-After date in year 9999", 503, hdr("Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT"),
			call.Outcome{Kind: call.Throttle, Status: 503, RetryAfter: call.DefaultMaxRetryAfter, WaitBeyondCap: true}},
	} {
		if got := (call.Classifier{}).Classify(tc.status, tc.h, now); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// hdr is a header of key, value pairs.
func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}
