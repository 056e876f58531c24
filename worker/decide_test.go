package worker

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/call"
)

func throttle(ra time.Duration) call.Outcome {
	return call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: ra}
}

// decisionRows are the rows of the decision table in docs/worker.md, by
// the text of their first cell, each with the facts of a delivery that
// falls in it. TestDecideMirrorsDocs checks that the two lists match.
var decisionRows = []struct {
	doc  string
	f    Facts
	want Decision
}{
	{"success (status < 400)",
		Facts{Step: StepCalled, Call: call.Outcome{Kind: call.Success, Status: 200}, Attempts: 1, Deliveries: 1},
		Decision{Action: ActionAck, Outcome: OutcomeSucceeded}},
	{"a 3xx not in `target.success_statuses` [none]",
		Facts{Step: StepCalled, Call: call.Outcome{Kind: call.Success, Status: 307}, Attempts: 1, Deliveries: 1},
		Decision{Action: ActionDeadLetter, Reason: ReasonRedirect, Outcome: OutcomeDeadLettered}},
	{"a 4xx that is not a throttle (400, 404, 410, 422…)",
		Facts{Step: StepCalled, Call: call.Outcome{Kind: call.ClientError, Status: 404}, Attempts: 1, Deliveries: 1},
		Decision{Action: ActionDeadLetter, Reason: ReasonClientError, Outcome: OutcomeDeadLettered}},
	// Delivery 3, full jitter pinned to its ceiling: backoff 1s·2² = 4s,
	// below the Retry-After of 7s.
	{"throttle (429; 503 with a wait), 5xx, network error or timeout on every one of `max_attempts` [4] attempts",
		Facts{Step: StepCalled, Call: throttle(7 * time.Second), Attempts: 4, Deliveries: 3, Jitter: 1},
		Decision{Action: ActionNak, Delay: 7 * time.Second, Outcome: OutcomeRedelivered}},
	{"… and the delivery count has reached `max_deliveries` [10]",
		Facts{Step: StepCalled, Call: call.Outcome{Kind: call.ServerError, Status: 503}, Attempts: 4, Deliveries: 10, Jitter: 1},
		Decision{Action: ActionDeadLetter, Reason: ReasonMaxDeliveries, Outcome: OutcomeDeadLettered}},
	// Retry-After: 999999999 on the first attempt: no retry holding the
	// slot, a nak with the delay capped at max_redelivery_delay.
	{"throttle with a Retry-After longer than `backoff.cap` [30s]",
		Facts{Step: StepCalled, Call: throttle(999999999 * time.Second), Attempts: 1, Deliveries: 1, Jitter: 1},
		Decision{Action: ActionNak, Delay: 10 * time.Minute, Outcome: OutcomeRedelivered}},
	{"the limiter rejected the request (queue full, waited `max_wait`)",
		Facts{Step: StepRejected, Attempts: 0, Deliveries: 1},
		Decision{Action: ActionNak, Delay: 2 * time.Second, Outcome: OutcomeRejected}},
	{"invalid job (see above)",
		Facts{Step: StepInvalid, Reason: ReasonBadPath, Deliveries: 1},
		Decision{Action: ActionDeadLetter, Reason: ReasonBadPath, Outcome: OutcomeDeadLettered}},
	{"shutdown while the job waits for units or backs off",
		Facts{Step: StepCalled, Call: throttle(0), Attempts: 2, Deliveries: 1, ShuttingDown: true, Jitter: 1},
		Decision{Action: ActionRelease, Outcome: OutcomeReleased}},
}

// Each row of the decision table of docs/worker.md, with the defaults of
// Config (max_attempts 4, max_deliveries 10, backoff 1s to 30s,
// max_redelivery_delay 10m, rejected_delay 2s).
func TestDecideTable(t *testing.T) {
	cfg := Config{}.withDefaults()
	for _, r := range decisionRows {
		if got := Decide(cfg, r.f); got != r.want {
			t.Errorf("%s:\n Decide(%+v)\n = %+v\n want %+v", r.doc, r.f, got, r.want)
		}
	}
}

// The edges of the table: what the doc rows leave implicit.
func TestDecideEdges(t *testing.T) {
	cfg := Config{}.withDefaults()
	tests := []struct {
		name string
		f    Facts
		want Decision
	}{
		{"success during shutdown is still acked",
			Facts{Step: StepCalled, Call: call.Outcome{Kind: call.Success, Status: 204}, Attempts: 3, ShuttingDown: true},
			Decision{Action: ActionAck, Outcome: OutcomeSucceeded}},
		{"a 4xx during shutdown is still dead-lettered",
			Facts{Step: StepCalled, Call: call.Outcome{Kind: call.ClientError, Status: 422}, Attempts: 1, ShuttingDown: true},
			Decision{Action: ActionDeadLetter, Reason: ReasonClientError, Outcome: OutcomeDeadLettered}},
		{"an invalid job during shutdown is still dead-lettered",
			Facts{Step: StepInvalid, Reason: ReasonTooLarge, ShuttingDown: true},
			Decision{Action: ActionDeadLetter, Reason: ReasonTooLarge, Outcome: OutcomeDeadLettered}},
		{"shutdown cuts the wait for units: released, not rejected",
			Facts{Step: StepRejected, ShuttingDown: true},
			Decision{Action: ActionRelease, Outcome: OutcomeReleased}},
		{"shutdown after the last attempt of the last delivery: released, not dead-lettered",
			Facts{Step: StepCalled, Call: throttle(0), Attempts: 4, Deliveries: 10, ShuttingDown: true},
			Decision{Action: ActionRelease, Outcome: OutcomeReleased}},
		{"retry after attempt 1: the backoff ceiling is backoff.base",
			Facts{Step: StepCalled, Call: call.Outcome{Kind: call.NetworkError}, Attempts: 1, Deliveries: 1, Jitter: 1},
			Decision{Action: ActionRetry, Delay: time.Second}},
		{"retry after attempt 3: ceiling 1s·2², half of it with jitter 0.5",
			Facts{Step: StepCalled, Call: call.Outcome{Kind: call.ServerError, Status: 502}, Attempts: 3, Deliveries: 1, Jitter: 0.5},
			Decision{Action: ActionRetry, Delay: 2 * time.Second}},
		{"retry never before Retry-After",
			Facts{Step: StepCalled, Call: throttle(9 * time.Second), Attempts: 1, Deliveries: 1, Jitter: 1},
			Decision{Action: ActionRetry, Delay: 9 * time.Second}},
		{"retry with no jitter and no Retry-After is immediate",
			Facts{Step: StepCalled, Call: throttle(0), Attempts: 2, Deliveries: 1, Jitter: 0},
			Decision{Action: ActionRetry, Delay: 0}},
		{"redelivery backoff by delivery count: 1s·2⁸ at delivery 9",
			Facts{Step: StepCalled, Call: throttle(0), Attempts: 4, Deliveries: 9, Jitter: 1},
			Decision{Action: ActionNak, Delay: 256 * time.Second, Outcome: OutcomeRedelivered}},
		{"a Retry-After beyond max_redelivery_delay is capped",
			Facts{Step: StepCalled, Call: throttle(time.Hour), Attempts: 4, Deliveries: 1, Jitter: 0},
			Decision{Action: ActionNak, Delay: 10 * time.Minute, Outcome: OutcomeRedelivered}},
		{"a delivery count past max_deliveries is dead-lettered",
			Facts{Step: StepCalled, Call: call.Outcome{Kind: call.NetworkError}, Attempts: 4, Deliveries: 15},
			Decision{Action: ActionDeadLetter, Reason: ReasonMaxDeliveries, Outcome: OutcomeDeadLettered}},
		{"one delivery short of max_deliveries is redelivered",
			Facts{Step: StepCalled, Call: call.Outcome{Kind: call.NetworkError}, Attempts: 4, Deliveries: 9, Jitter: 0},
			Decision{Action: ActionNak, Delay: 0, Outcome: OutcomeRedelivered}},
		{"a jitter out of [0, 1] is clamped",
			Facts{Step: StepCalled, Call: throttle(0), Attempts: 1, Deliveries: 1, Jitter: 7},
			Decision{Action: ActionRetry, Delay: time.Second}},
	}
	for _, tt := range tests {
		if got := Decide(cfg, tt.f); got != tt.want {
			t.Errorf("%s:\n Decide(%+v)\n = %+v\n want %+v", tt.name, tt.f, got, tt.want)
		}
	}

	// The limits come from the config.
	small := Config{MaxAttempts: 1, MaxDeliveries: 2, RejectedDelay: time.Minute, BackoffBase: 10 * time.Millisecond,
		BackoffCap: 20 * time.Millisecond, MaxRedeliveryDelay: 50 * time.Millisecond}.withDefaults()
	limits := []struct {
		name string
		f    Facts
		want Decision
	}{
		{"max_attempts 1: no retry", Facts{Step: StepCalled, Call: throttle(0), Attempts: 1, Deliveries: 1, Jitter: 1},
			Decision{Action: ActionNak, Delay: 10 * time.Millisecond, Outcome: OutcomeRedelivered}},
		{"max_deliveries 2", Facts{Step: StepCalled, Call: throttle(0), Attempts: 1, Deliveries: 2, Jitter: 1},
			Decision{Action: ActionDeadLetter, Reason: ReasonMaxDeliveries, Outcome: OutcomeDeadLettered}},
		{"rejected_delay", Facts{Step: StepRejected, Deliveries: 1},
			Decision{Action: ActionNak, Delay: time.Minute, Outcome: OutcomeRejected}},
		{"max_redelivery_delay", Facts{Step: StepCalled, Call: throttle(time.Second), Attempts: 1, Deliveries: 1},
			Decision{Action: ActionNak, Delay: 50 * time.Millisecond, Outcome: OutcomeRedelivered}},
	}
	for _, tt := range limits {
		if got := Decide(small, tt.f); got != tt.want {
			t.Errorf("%s:\n Decide(%+v)\n = %+v\n want %+v", tt.name, tt.f, got, tt.want)
		}
	}
	many := Config{MaxAttempts: 12, MaxDeliveries: 40}.withDefaults()
	capped := []struct {
		name string
		f    Facts
		want Decision
	}{
		{"retry backoff capped at backoff.cap (1s·2¹⁰ > 30s)", Facts{Step: StepCalled, Call: throttle(0), Attempts: 11, Deliveries: 1, Jitter: 1},
			Decision{Action: ActionRetry, Delay: 30 * time.Second}},
		{"redelivery backoff capped at max_redelivery_delay (1s·2¹⁹ > 10m)", Facts{Step: StepCalled, Call: throttle(0), Attempts: 12, Deliveries: 20, Jitter: 1},
			Decision{Action: ActionNak, Delay: 10 * time.Minute, Outcome: OutcomeRedelivered}},
	}
	for _, tt := range capped {
		if got := Decide(many, tt.f); got != tt.want {
			t.Errorf("%s:\n Decide(%+v)\n = %+v\n want %+v", tt.name, tt.f, got, tt.want)
		}
	}
}

// The rows of TestDecideTable are the rows of the decision table in
// docs/worker.md, one for one: a row added to the docs needs a test row.
func TestDecideMirrorsDocs(t *testing.T) {
	data, err := os.ReadFile("../docs/worker.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Decisions\n")
	if !ok {
		t.Fatal("docs/worker.md has no Decisions section")
	}
	var docRows []string
	inTable := false
	for line := range strings.SplitSeq(section, "\n") {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		cells := strings.Split(line, "|")
		first := strings.TrimSpace(cells[1])
		if first == "outcome of the attempts" || strings.HasPrefix(first, "---") {
			continue
		}
		docRows = append(docRows, first)
	}
	var testRows []string
	for _, r := range decisionRows {
		testRows = append(testRows, r.doc)
	}
	if !slices.Equal(docRows, testRows) {
		t.Errorf("decision table rows differ:\n docs/worker.md: %q\n decisionRows:   %q", docRows, testRows)
	}
}

func TestOutcomeAndReasonStrings(t *testing.T) {
	outcomes := map[Outcome]string{OutcomeSucceeded: "succeeded", OutcomeDeadLettered: "dead_lettered",
		OutcomeRedelivered: "redelivered", OutcomeRejected: "rejected", OutcomeReleased: "released", OutcomeUnsettled: "unsettled"}
	for o, want := range outcomes {
		if o.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(o), o.String(), want)
		}
	}
	reasons := map[Reason]string{ReasonTooLarge: "envelope_too_large", ReasonBadJSON: "bad_json", ReasonUnknownType: "unknown_type",
		ReasonBadCost: "bad_cost", ReasonBodyConflict: "body_conflict", ReasonBadBodyBase64: "bad_body_base64",
		ReasonBadMethod: "bad_method", ReasonBadPath: "bad_path", ReasonBadHeader: "bad_header",
		ReasonInvalidRequest: "invalid_request", ReasonClientError: "client_error", ReasonMaxDeliveries: "max_deliveries", ReasonRedirect: "redirect"}
	if len(reasons) != int(numReasons)-1 {
		t.Errorf("%d reasons listed, %d defined", len(reasons), int(numReasons)-1)
	}
	for r, want := range reasons {
		if r.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(r), r.String(), want)
		}
	}
	if s := Reason(0).String(); s != "Reason(0)" {
		t.Errorf("Reason(0).String() = %q", s)
	}
}
