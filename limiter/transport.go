package limiter

import (
	"errors"
	"net/http"
)

// Transport is an http.RoundTripper that waits on a Limiter for each
// request's units, sends the request with Base, classifies the response with
// Classifier and reports the outcome to the Limiter.
//
// Put retries outside it (a retrying RoundTripper whose next hop is the
// Transport), so that every attempt waits for its units and every response
// is observed. A request the Limiter rejects returns an error wrapping
// ErrRejected, and is not sent.
//
// The Transport reads neither the request nor the response body.
type Transport struct {
	// Limiter is required.
	Limiter *Limiter
	// Base sends the requests. Nil means http.DefaultTransport.
	Base http.RoundTripper
	// Classifier classifies responses; the zero value is the default (429,
	// and 503 with Retry-After, are throttles).
	Classifier Classifier
	// Cost gives a request's units from its key. Nil means 1 unit each.
	Cost CostEstimator
	// Key gives a request's key for Cost. Nil means the method and the
	// path, as in "GET /v1/items".
	Key func(*http.Request) string
}

var _ http.RoundTripper = (*Transport)(nil)

var errNoLimiter = errors.New("limiter: Transport.Limiter is nil")

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.Limiter == nil {
		closeBody(req)
		return nil, errNoLimiter
	}
	units := float64(DefaultCost)
	if t.Cost != nil {
		key := ""
		if t.Key != nil {
			key = t.Key(req)
		} else {
			key = req.Method + " " + req.URL.Path
		}
		units = t.Cost.Cost(key)
	}
	ticket, err := t.Limiter.Wait(req.Context(), units)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	t.Limiter.Observe(ticket, t.Classifier.ClassifyResponse(resp, err))
	return resp, err
}

// closeBody honours the RoundTripper contract: the request body is closed
// even when the request is not sent.
func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}
