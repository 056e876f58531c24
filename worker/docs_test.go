package worker

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/sources"
)

// The dead-letter record of docs/worker.md ("Records") is one the worker
// writes: every key is a field of DeadLetter, every field DeadLetter always
// writes is shown, the reason is one the worker gives, and the detail is
// the one it writes for that reason and status.
func TestDocsDeadLetterExample(t *testing.T) {
	example := testkit.BlockAfter(t, "../docs/worker.md", "\n## Records\n")
	var dl DeadLetter
	if err := testkit.CheckJSONExample(example, &dl); err != nil {
		t.Fatalf("docs/worker.md, the dead letter of Records: %v", err)
	}
	reason, ok := reasonNamed(dl.Reason)
	if !ok {
		t.Fatalf("docs/worker.md: the dead letter's reason %q is none the worker gives (%s)", dl.Reason, strings.Join(reasonNames[1:], ", "))
	}
	if reason == ReasonClientError || reason == ReasonMaxDeliveries {
		w := &Worker{}
		d := &delivery{lastStatus: dl.Status, msg: deliveredMsg{n: dl.Deliveries}}
		if want := w.detail(d, reason); dl.Detail != want {
			t.Errorf("docs/worker.md: the dead letter's detail is %q; the worker writes %q", dl.Detail, want)
		}
	}
	if dl.LastAt.Before(dl.FirstAt) {
		t.Errorf("docs/worker.md: the dead letter's last_at %v is before its first_at %v", dl.LastAt, dl.FirstAt)
	}
}

// deliveredMsg is a message delivered n times; nothing else of it is read.
type deliveredMsg struct {
	sources.Message
	n int
}

func (m deliveredMsg) DeliveryCount() int { return m.n }

// reasonNamed returns the reason whose String is name.
func reasonNamed(name string) (Reason, bool) {
	for r := Reason(1); r < numReasons; r++ {
		if r.String() == name {
			return r, true
		}
	}
	return 0, false
}

// The job envelopes of README.md, docs/worker.md, docs/sources.md and
// docs/simulator.md decode as the worker decodes them, and give the job
// each field shows.
func TestDocsEnvelopeExamples(t *testing.T) {
	for _, c := range []struct {
		file, marker string
		inline       bool // a code span in the text, not a block
	}{
		{"../README.md", "A job is a JSON object", false},
		{"../docs/worker.md", "\n## The job envelope\n", false},
		{"../docs/sources.md", "\n## `sluice enqueue`\n", false},
		{"../docs/simulator.md", "carries them in its envelope, e.g.", true},
	} {
		read := testkit.BlockAfter
		if c.inline {
			read = testkit.CodeAfter
		}
		example := read(t, c.file, c.marker)
		if err := checkEnvelopeExample(example); err != nil {
			t.Errorf("%s, the envelope after %q: %v\n%s", c.file, strings.TrimSpace(c.marker), err, example)
		}
	}
}

// checkEnvelopeExample decodes a documented envelope with the worker's
// decoder (the job's cost trusted, no type configured) and checks that
// each key it holds is an envelope field and gives the job that value.
func checkEnvelopeExample(example string) error {
	if err := testkit.DecodeStrict(example, &envelope{}); err != nil { // every field is optional
		return err
	}
	dec, err := NewDecoder(JobsConfig{TrustJobCost: true})
	if err != nil {
		return err
	}
	job, err := dec.Decode("message-id", nil, []byte(example))
	if err != nil {
		return fmt.Errorf("the worker's decoder: %w", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(example), &fields); err != nil {
		return err
	}
	for key, raw := range fields {
		if err := jobHas(job, key, raw); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	}
	return nil
}

// jobHas checks that job holds the value raw of the envelope's key.
func jobHas(job Job, key string, raw json.RawMessage) error {
	var s string
	str := func(got string) error {
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		if got != s {
			return fmt.Errorf("the job has %q, the example %q", got, s)
		}
		return nil
	}
	switch key {
	case "id":
		return str(job.ID)
	case "type":
		return str(job.Type)
	case "method":
		return str(job.Method)
	case "path":
		return str(job.Path)
	case "headers":
		var h map[string]string
		if err := json.Unmarshal(raw, &h); err != nil {
			return err
		}
		want := http.Header{}
		for k, v := range h {
			want.Set(k, v)
		}
		if fmt.Sprint(want) != fmt.Sprint(job.Header) { // fmt prints a map sorted
			return fmt.Errorf("the job has %v, the example %v", job.Header, want)
		}
	case "body":
		if json.Unmarshal(raw, &s) == nil {
			return str(string(job.Body))
		}
		if same, err := testkit.SameJSON(raw, job.Body); err != nil || !same {
			return fmt.Errorf("the job's body is %q, the example's %s (%v)", job.Body, raw, err)
		}
	case "body_base64":
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		if b, err := base64.StdEncoding.DecodeString(s); err != nil || string(b) != string(job.Body) {
			return fmt.Errorf("the job's body is %q, the example's %q (%v)", job.Body, b, err)
		}
	case "cost":
		var c float64
		if err := json.Unmarshal(raw, &c); err != nil {
			return err
		}
		if job.Cost != c {
			return fmt.Errorf("the job costs %v, the example %v", job.Cost, c)
		}
	default:
		return fmt.Errorf("no job field for it")
	}
	return nil
}

// The envelope check fails on a misspelled key, a field the decoder
// refuses, and a value the job does not get.
func TestEnvelopeExampleCheckFails(t *testing.T) {
	if err := checkEnvelopeExample(`{"id": "a", "method": "PUT", "headers": {"X-A": "1"}, "body": {"b": 1}, "cost": 2}`); err != nil {
		t.Errorf("a good example: %v", err)
	}
	for _, bad := range []string{
		`{"id": "a", "methd": "PUT"}`,
		`{"id": "a", "method": "P UT"}`,
		`{"id": "a", "cost": -1}`,
		`{"id": "a", "body": "x", "body_base64": "eA=="}`,
		`{"id": ""}`, // the job takes the message's id
	} {
		if checkEnvelopeExample(bad) == nil {
			t.Errorf("%s passed the check", bad)
		}
	}
}
