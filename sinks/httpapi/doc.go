// Package httpapi calls the target API: it turns a call.Request built from a
// job into one HTTP call on the configured base URL, reads the response body
// up to a cap, and classifies the answer into a call.Outcome.
//
// The model: a Sink owns one connection pool to one target (scheme, host,
// port). A request never leaves it. The job's path is joined under the base
// URL's path and refused (call.ErrInvalidRequest, nothing sent) when it could
// reach anything else: absolute and scheme-relative URLs, user info,
// backslashes, control characters, dot segments and their percent-encoded
// forms, redirects (which are never followed). The job's headers pass
// through a filter: connection and framing headers, Host and Authorization
// (unless allowed) are dropped, and the config's headers, which are secret
// and never logged, replace any job header of the same name.
//
// Send returns a call.Response and, for a status of 400 or more, a *call.StatusError
// (errors.As) with the status, the Retry-After and a body excerpt; network
// errors and timeouts (ErrTimeout) are wrapped. Each call is bounded by
// Config.Timeout, from sending to the last byte read. A Sink is safe for
// concurrent use.
package httpapi
