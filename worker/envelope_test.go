package worker

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/http/httpguts"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/limiter/control"
)

func testJobs() JobsConfig {
	return JobsConfig{
		Types: map[string]JobType{
			"default": {Method: "POST", Path: "/jobs", Cost: 1},
			"export":  {Method: "PUT", Path: "/exports", Cost: 5},
		},
	}
}

func mustDecoder(t testing.TB, cfg JobsConfig) *Decoder {
	t.Helper()
	d, err := NewDecoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDecodeValid(t *testing.T) {
	trusted := testJobs()
	trusted.TrustJobCost = true
	tests := []struct {
		name string
		cfg  JobsConfig
		data string
		want Job
	}{
		{"empty object takes the default type", testJobs(), `{}`,
			Job{ID: "m1", Type: "default", Method: "POST", Path: "/jobs", Cost: 1}},
		{"type defaults", testJobs(), `{"type":"export","id":"j1"}`,
			Job{ID: "j1", Type: "export", Method: "PUT", Path: "/exports", Cost: 5}},
		{"envelope overrides method and path", testJobs(), `{"type":"export","method":"PATCH","path":"/x/1?q=a"}`,
			Job{ID: "m1", Type: "export", Method: "PATCH", Path: "/x/1?q=a", Cost: 5}},
		{"untrusted cost is ignored", testJobs(), `{"type":"export","cost":2}`,
			Job{ID: "m1", Type: "export", Method: "PUT", Path: "/exports", Cost: 5}},
		{"trusted cost overrides", trusted, `{"type":"export","cost":2.5}`,
			Job{ID: "m1", Type: "export", Method: "PUT", Path: "/exports", Cost: 2.5}},
		{"zero cost", trusted, `{"cost":0}`,
			Job{ID: "m1", Type: "default", Method: "POST", Path: "/jobs", Cost: 0}},
		{"string body", testJobs(), `{"body":"a\nb"}`,
			Job{ID: "m1", Type: "default", Method: "POST", Path: "/jobs", Cost: 1, Body: []byte("a\nb")}},
		{"JSON body is sent as is", testJobs(), `{"body":{"k":[1,2]}}`,
			Job{ID: "m1", Type: "default", Method: "POST", Path: "/jobs", Cost: 1, Body: []byte(`{"k":[1,2]}`)}},
		{"base64 body", testJobs(), `{"body_base64":"AAEC"}`,
			Job{ID: "m1", Type: "default", Method: "POST", Path: "/jobs", Cost: 1, Body: []byte{0, 1, 2}}},
		{"unknown type, not strict, takes the default type", testJobs(), `{"type":"other"}`,
			Job{ID: "m1", Type: "other", Method: "POST", Path: "/jobs", Cost: 1}},
		{"no types at all", JobsConfig{}, `{"type":"x"}`,
			Job{ID: "m1", Type: "x", Method: "POST", Path: "/", Cost: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mustDecoder(t, tt.cfg).Decode("m1", nil, []byte(tt.data))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if got.ID != tt.want.ID || got.Type != tt.want.Type || got.Method != tt.want.Method ||
				got.Path != tt.want.Path || got.Cost != tt.want.Cost || !bytes.Equal(got.Body, tt.want.Body) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestDecodeHeaders(t *testing.T) {
	got, err := mustDecoder(t, testJobs()).Decode("m1", nil, []byte(`{"headers":{"x-a":"1","If-Match":"\"e\""}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Header.Get("X-A") != "1" || got.Header.Get("If-Match") != `"e"` {
		t.Errorf("headers = %v", got.Header)
	}
}

func TestDecodeRaw(t *testing.T) {
	cfg := testJobs()
	cfg.Envelope = EnvelopeRaw
	d := mustDecoder(t, cfg)
	got, err := d.Decode("m7", map[string]string{"sluice-type": "export"}, []byte("not json"))
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "m7" || got.Type != "export" || got.Method != "PUT" || got.Path != "/exports" || string(got.Body) != "not json" {
		t.Errorf("got %+v", got)
	}
	got, err = d.Decode("m8", nil, []byte(`{"type":"export"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Type != "default" || got.Path != "/jobs" || string(got.Body) != `{"type":"export"}` {
		t.Errorf("raw mode read the envelope: %+v", got)
	}
}

func TestDecodeInvalid(t *testing.T) {
	strict := testJobs()
	strict.Strict = true
	small := testJobs()
	small.MaxEnvelopeBytes = 16
	rawStrict := strict
	rawStrict.Envelope = EnvelopeRaw
	tests := []struct {
		name   string
		cfg    JobsConfig
		header map[string]string
		data   string
		reason Reason
	}{
		{"not JSON", testJobs(), nil, `hello`, ReasonBadJSON},
		{"empty", testJobs(), nil, ``, ReasonBadJSON},
		{"JSON array", testJobs(), nil, `[1]`, ReasonBadJSON},
		{"truncated", testJobs(), nil, `{"type":"a"`, ReasonBadJSON},
		{"type not a string", testJobs(), nil, `{"type":5}`, ReasonBadJSON},
		{"header value not a string", testJobs(), nil, `{"headers":{"a":1}}`, ReasonBadJSON},
		{"unknown type in strict mode", strict, nil, `{"type":"nope"}`, ReasonUnknownType},
		{"raw mode, unknown type in strict mode", rawStrict, map[string]string{TypeHeader: "nope"}, `x`, ReasonUnknownType},
		{"negative cost", testJobs(), nil, `{"cost":-1}`, ReasonBadCost},
		{"string cost", testJobs(), nil, `{"cost":"5"}`, ReasonBadCost},
		{"NaN cost", testJobs(), nil, `{"cost":"NaN"}`, ReasonBadCost},
		{"bare NaN cost", testJobs(), nil, `{"cost":NaN}`, ReasonBadJSON},
		{"huge cost", testJobs(), nil, `{"cost":1e999}`, ReasonBadCost},
		{"object cost", testJobs(), nil, `{"cost":{}}`, ReasonBadCost},
		{"both bodies", testJobs(), nil, `{"body":"a","body_base64":"YQ=="}`, ReasonBodyConflict},
		{"bad base64", testJobs(), nil, `{"body_base64":"***"}`, ReasonBadBodyBase64},
		{"bad method", testJobs(), nil, `{"method":"GET /x"}`, ReasonBadMethod},
		{"absolute URL", testJobs(), nil, `{"path":"http://169.254.169.254/"}`, ReasonBadPath},
		{"scheme-relative", testJobs(), nil, `{"path":"//evil.example/x"}`, ReasonBadPath},
		{"other scheme", testJobs(), nil, `{"path":"https://other/"}`, ReasonBadPath},
		{"userinfo", testJobs(), nil, `{"path":"@evil.example/x"}`, ReasonBadPath},
		{"backslash", testJobs(), nil, `{"path":"/\\evil.example"}`, ReasonBadPath},
		{"CR LF in path", testJobs(), nil, `{"path":"/a\r\nHost: x"}`, ReasonBadPath},
		{"CR LF in header value", testJobs(), nil, `{"headers":{"X-A":"1\r\nX-B: 2"}}`, ReasonBadHeader},
		{"bad header name", testJobs(), nil, `{"headers":{"X A":"1"}}`, ReasonBadHeader},
		{"oversized", small, nil, `{"body":"0123456789abcdef"}`, ReasonTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mustDecoder(t, tt.cfg).Decode("m1", tt.header, []byte(tt.data))
			var ie *InvalidJobError
			if !errors.As(err, &ie) {
				t.Fatalf("Decode error = %v, want *InvalidJobError", err)
			}
			if ie.Reason != tt.reason {
				t.Errorf("reason = %v (%v), want %v", ie.Reason, err, tt.reason)
			}
		})
	}
}

func TestDecodeOversizedIsNotParsed(t *testing.T) {
	// A payload one byte over the cap is rejected by its length alone: it is
	// not even valid JSON, and the reason is still the size.
	cfg := testJobs()
	cfg.MaxEnvelopeBytes = 1024
	data := append([]byte(`{"body":"`), bytes.Repeat([]byte{'x'}, 1024)...)
	_, err := mustDecoder(t, cfg).Decode("m1", nil, data)
	var ie *InvalidJobError
	if !errors.As(err, &ie) || ie.Reason != ReasonTooLarge {
		t.Fatalf("err = %v, want %s", err, ReasonTooLarge)
	}
	if strings.Contains(err.Error(), "xxxx") {
		t.Errorf("error quotes the payload: %v", err)
	}
}

func TestJobsConfigValidate(t *testing.T) {
	bad := []JobsConfig{
		{Envelope: "xml"},
		{MaxEnvelopeBytes: -1},
		{Types: map[string]JobType{"a": {Path: "//x"}}},
		{Types: map[string]JobType{"a": {Method: "G T"}}},
		{Types: map[string]JobType{"a": {Cost: -1}}},
	}
	for _, c := range bad {
		if err := c.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", c)
		}
	}
	if err := testJobs().Validate(); err != nil {
		t.Errorf("Validate(testJobs) = %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"id":"a","type":"export","method":"GET","path":"/x?y=1","headers":{"A":"b"},"body":"hi","cost":2}`,
		`{"body_base64":"AAEC"}`, `{"body":{"a":[1,2,{}]}}`, `{"cost":-1}`, `{"path":"//evil"}`, `not json`,
		`{"headers":{"a":"b\r\nc"}}`, `{"cost":1e308}`, `[]`, `{"type":null,"body":null}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	cfg := testJobs()
	cfg.TrustJobCost = true
	cfg.MaxEnvelopeBytes = 4096
	d := mustDecoder(f, cfg)
	raw := cfg
	raw.Envelope = EnvelopeRaw
	dr := mustDecoder(f, raw)
	f.Fuzz(func(t *testing.T, data []byte, rawMode bool) {
		dec := d
		if rawMode {
			dec = dr
		}
		job, err := dec.Decode("m1", map[string]string{TypeHeader: "export"}, data)
		if err != nil {
			var ie *InvalidJobError
			if !errors.As(err, &ie) || ie.Reason == 0 {
				t.Fatalf("error %v is not an *InvalidJobError with a reason", err)
			}
			if len(data) > cfg.MaxEnvelopeBytes && ie.Reason != ReasonTooLarge {
				t.Fatalf("oversized payload gave %v", ie.Reason)
			}
			if !utf8.ValidString(err.Error()) && utf8.Valid(data) {
				t.Fatalf("error is not valid UTF-8: %q", err)
			}
			return
		}
		if len(data) > cfg.MaxEnvelopeBytes {
			t.Fatal("oversized payload accepted")
		}
		if call.CheckPath("path", job.Path) != nil {
			t.Fatalf("accepted path %q", job.Path)
		}
		if call.CheckMethod("method", job.Method) != nil {
			t.Fatalf("accepted method %q", job.Method)
		}
		if control.CheckCost("cost", job.Cost) != nil {
			t.Fatalf("accepted cost %v", job.Cost)
		}
		for k, vs := range job.Header {
			for _, v := range vs {
				if !httpguts.ValidHeaderFieldName(k) || !httpguts.ValidHeaderFieldValue(v) {
					t.Fatalf("accepted header %q: %q", k, v)
				}
			}
		}
	})
}
