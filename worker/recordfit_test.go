package worker

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// limitedOutput refuses nothing itself; it only declares a record limit.
type limitedOutput struct{ max int }

func (limitedOutput) Publish(context.Context, string, []byte) error { return nil }
func (o limitedOutput) MaxRecordBytes(string) int                   { return o.max }

type plainOutput struct{}

func (plainOutput) Publish(context.Context, string, []byte) error { return nil }

// A dead-letter record larger than its output takes is cut to fit, its
// payload a prefix of the message's (kept as text when it is text), and
// marked truncated; a record that fits, or an output without a limit,
// keeps the record as it is.
func TestFitRecord(t *testing.T) {
	cases := []struct {
		name    string
		payload []byte
		max     int
		base64  bool
	}{
		{"ascii", []byte(`{"body":"` + strings.Repeat("x", 10000)), 4000, false},
		{"escaped quotes", []byte(`{"body":"` + strings.Repeat(`\"`, 5000)), 3000, false},
		{"multi-byte runes", []byte(strings.Repeat("é€😀", 2000)), 5001, false},
		{"binary", bytes.Repeat([]byte{0xff, 0x00, 0x80}, 3000), 2500, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := DeadLetter{ID: "j1", Reason: ReasonBadJSON.String(), Detail: "syntax error", Headers: map[string]string{"Nats-Msg-Id": "j1"}}
			rec.setPayload(tc.payload, len(tc.payload))
			whole, _ := json.Marshal(rec)
			if len(whole) <= tc.max {
				t.Fatalf("test record already fits: %d <= %d", len(whole), tc.max)
			}
			data, err := fitRecord(limitedOutput{tc.max}, "j1", &rec, tc.payload, whole)
			if err != nil {
				t.Fatal(err)
			}
			if len(data) > tc.max {
				t.Fatalf("record is %d bytes, max %d", len(data), tc.max)
			}
			var got DeadLetter
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatal(err)
			}
			p, err := got.Data()
			if err != nil {
				t.Fatal(err)
			}
			if !got.PayloadTruncated || len(p) == 0 || !bytes.HasPrefix(tc.payload, p) {
				t.Errorf("payload %d bytes (truncated %v), want a non-empty prefix", len(p), got.PayloadTruncated)
			}
			if (got.PayloadBase64 != "") != tc.base64 {
				t.Errorf("base64 = %v, want %v", got.PayloadBase64 != "", tc.base64)
			}
			if len(data) < tc.max/2 {
				t.Errorf("record cut to %d bytes, far below the %d the output takes", len(data), tc.max)
			}
		})
	}

	rec := DeadLetter{ID: "j2", Reason: ReasonBadJSON.String()}
	payload := []byte(strings.Repeat("y", 5000))
	rec.setPayload(payload, len(payload))
	whole, _ := json.Marshal(rec)
	for name, out := range map[string]Output{"no limit": plainOutput{}, "fits": limitedOutput{len(whole)}} {
		data, err := fitRecord(out, "j2", &rec, payload, whole)
		if err != nil || !bytes.Equal(data, whole) || rec.PayloadTruncated {
			t.Errorf("%s: record changed (%d bytes, truncated %v, err %v)", name, len(data), rec.PayloadTruncated, err)
		}
	}
}

// A result record larger than its output takes keeps a prefix of the body,
// marked truncated.
func TestFitResult(t *testing.T) {
	for name, body := range map[string][]byte{
		"text":   []byte(strings.Repeat(`{"k":"v\n"}`, 2000)),
		"binary": bytes.Repeat([]byte{0xfe, 0x01}, 5000),
	} {
		res := Result{ID: "j1", Type: "t", Status: 200}
		res.Body = string(body)
		if !utf8.Valid(body) {
			res.Body, res.BodyBase64 = "", base64.StdEncoding.EncodeToString(body)
		}
		whole, _ := json.Marshal(res)
		const max = 3000
		data, err := fitResult(limitedOutput{max}, "j1", &res, body, whole)
		if err != nil {
			t.Fatal(err)
		}
		var got Result
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		b := []byte(got.Body)
		if got.BodyBase64 != "" {
			b, _ = base64.StdEncoding.DecodeString(got.BodyBase64)
		}
		if len(data) > max || len(data) < max/2 || !got.BodyTruncated || len(b) == 0 || !bytes.HasPrefix(body, b) || got.ID != "j1" {
			t.Errorf("%s: %d-byte record, truncated %v, body %d bytes", name, len(data), got.BodyTruncated, len(b))
		}
	}
}
