package replay

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/limiter"
)

// traceQuota is the "quota" object of an outcome event in a trace: the
// hint the response carried, in the numbers of a call.Quota.
//
//	{"at": 4, "op": "success", "id": "r1", "quota": {"limit": 600, "remaining": 40, "reset": 12, "window": 60}}
//
// Every field is optional; reset and window are in seconds. Values are
// passed to the Core as they are, so that a trace can show what it does
// with hostile ones (negative, absurd): it ignores them.
type traceQuota struct {
	Limit     *json.Number `json:"limit"`
	Remaining *json.Number `json:"remaining"`
	Reset     *json.Number `json:"reset"`
	Window    *json.Number `json:"window"`
}

func (tq traceQuota) quota() (call.Quota, error) {
	var q call.Quota
	num := func(name string, n *json.Number) (float64, error) {
		if n == nil {
			return 0, nil
		}
		f, err := n.Float64()
		if err != nil {
			return 0, fmt.Errorf("%s: must be a number, got %s", name, *n)
		}
		return f, nil
	}
	var err error
	if q.Limit, err = num("limit", tq.Limit); err != nil {
		return q, err
	}
	if q.Remaining, err = num("remaining", tq.Remaining); err != nil {
		return q, err
	}
	q.HasRemaining = tq.Remaining != nil
	for _, f := range []struct {
		name string
		n    *json.Number
		dst  *time.Duration
	}{{"reset", tq.Reset, &q.Reset}, {"window", tq.Window, &q.Window}} {
		s, err := num(f.name, f.n)
		if err != nil {
			return q, err
		}
		// Beyond ±1e9 s (31 years) saturate: the Core ignores them anyway.
		*f.dst = time.Duration(math.Round(math.Max(-1e9, math.Min(1e9, s)) * 1e9))
	}
	return q, nil
}

// appendQuota writes the quota fields of an output line once the Core has
// seen a hint: the running budget and its end (null when none runs) and
// this instance's rate ceiling (null when no limit was announced).
func appendQuota(b []byte, c *limiter.Core) []byte {
	if !c.QuotaSeen() {
		return b
	}
	b = append(b, `, "budget": `...)
	budget, until, ok := c.QuotaBudget()
	if ok {
		b = appendValue(b, budget)
		b = append(b, `, "budget_until": `...)
		b = appendSeconds(b, until.Sub(traceStart))
	} else {
		b = append(b, `null, "budget_until": null`...)
	}
	b = append(b, `, "ceiling": `...)
	if p, ok := c.QuotaCeiling(); ok {
		return appendValue(b, p)
	}
	return append(b, "null"...)
}
