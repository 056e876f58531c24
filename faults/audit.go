package faults

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Accepted reads the target's log of accepted job ids, one per line (the
// format of `sluice testserver --log`), and counts the calls per id.
func Accepted(r io.Reader) (map[string]int, error) {
	counts := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		id := strings.TrimSpace(sc.Text())
		if id != "" {
			counts[id]++
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("faults: reading the target log: %w", err)
	}
	return counts, nil
}

// DeadLetter is the part of a dead-letter record the audit reads.
type DeadLetter struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
	Detail string `json:"detail"`
}

// ParseDeadLetter decodes one dead-letter record.
func ParseDeadLetter(data []byte) (DeadLetter, error) {
	var d DeadLetter
	if err := json.Unmarshal(data, &d); err != nil {
		return d, fmt.Errorf("faults: a dead-letter record is not JSON: %w", err)
	}
	if d.ID == "" || d.Reason == "" {
		return d, fmt.Errorf("faults: a dead-letter record without id or reason: %.200s", bytes.TrimSpace(data))
	}
	return d, nil
}

// Audit is what happened to every job of a scenario, from the target's
// own log and the dead-letter records.
type Audit struct {
	Jobs int // jobs published
	// Lost are jobs that reached the target never and were not
	// dead-lettered either.
	Lost []string
	// Duplicates are jobs that reached the target more than once;
	// ExtraCalls counts the calls beyond the first.
	Duplicates []string
	ExtraCalls int
	// Accepted counts the target's accepted calls per job.
	Accepted map[string]int
	// Dead maps each dead-lettered job to its reason.
	Dead map[string]string
	// Anomalies are findings that break the model whatever the scenario:
	// an id the target saw that was never published, a job dead-lettered
	// twice, a dead-lettered job that also reached the target.
	Anomalies []string
}

// Check audits the published job ids against the target's accepted calls
// and the dead-letter records.
func Check(published []string, accepted map[string]int, dead []DeadLetter) Audit {
	a := Audit{Jobs: len(published), Dead: map[string]string{}, Accepted: accepted}
	known := make(map[string]bool, len(published))
	for _, id := range published {
		known[id] = true
	}
	deadCount := map[string]int{}
	for _, d := range dead {
		deadCount[d.ID]++
		if deadCount[d.ID] == 2 {
			a.Anomalies = append(a.Anomalies, fmt.Sprintf("job %s dead-lettered more than once", d.ID))
		}
		a.Dead[d.ID] = d.Reason
		if !known[d.ID] {
			a.Anomalies = append(a.Anomalies, fmt.Sprintf("dead letter for job %s, which was never published", d.ID))
		}
	}
	for _, id := range published {
		n := accepted[id]
		_, isDead := a.Dead[id]
		switch {
		case n == 0 && !isDead:
			a.Lost = append(a.Lost, id)
		case n > 0 && isDead:
			a.Anomalies = append(a.Anomalies, fmt.Sprintf("job %s reached the target and was dead-lettered (%s)", id, a.Dead[id]))
		}
		if n > 1 {
			a.Duplicates = append(a.Duplicates, id)
			a.ExtraCalls += n - 1
		}
	}
	for _, id := range slices.Sorted(maps.Keys(accepted)) {
		if !known[id] {
			a.Anomalies = append(a.Anomalies, fmt.Sprintf("the target accepted job %s, which was never published", id))
		}
	}
	return a
}

// Reasons counts the dead letters by reason.
func (a Audit) Reasons() map[string]int {
	out := map[string]int{}
	for _, r := range a.Dead {
		out[r]++
	}
	return out
}

// ReasonsText is Reasons as "reason=N ..." in name order.
func (a Audit) ReasonsText() string {
	r := a.Reasons()
	names := make([]string, 0, len(r))
	for k := range r {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s=%d", k, r[k])
	}
	return strings.Join(parts, " ")
}
