package call

import (
	"fmt"
	"time"
)

// Kind is the class of a response as the limiter sees it.
type Kind int

const (
	// Success is a response below 400 that is not a throttle.
	Success Kind = iota
	// Throttle is a 429, or a 503 with Retry-After (by default).
	Throttle
	// ServerError is a 5xx that is not a throttle. It changes nothing.
	ServerError
	// ClientError is a 4xx that is not a throttle. For the rate it counts
	// as a success: the API answered and did not push back.
	ClientError
	// NetworkError is a failure with no response (connection refused,
	// timeout, reset). It changes nothing.
	NetworkError
)

var kindNames = [...]string{"success", "throttle", "server_error", "client_error", "network_error"}

func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return fmt.Sprintf("Kind(%d)", int(k))
	}
	return kindNames[k]
}

// Outcome is a classified response.
type Outcome struct {
	Kind       Kind
	Status     int           // HTTP status, 0 for a network error
	RetryAfter time.Duration // 0 when the response gave none
	// WaitBeyondCap: the response asked for a wait beyond the classifier's
	// MaxRetryAfter, so RetryAfter holds the cap. The limiter does not
	// believe such an answer (docs/limiter.md, Throttle); the worker still
	// hands the job back with the capped wait.
	WaitBeyondCap bool
	Quota         Quota // the quota the response announced; zero when none
}
