package worker

import (
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"
)

// RecordLimiter is implemented by outputs that refuse a record over a size
// (a NATS server's max_payload). The worker cuts the payload of a
// dead-letter record to fit (PayloadTruncated), so that a record too large
// for its output does not keep its job redelivered for ever.
type RecordLimiter interface {
	// MaxRecordBytes is the largest record the output takes under key.
	MaxRecordBytes(key string) int
}

// fitRecord returns rec's encoding, data, or when out is a RecordLimiter
// and data is larger than it takes, the encoding of rec with its payload
// cut until it fits. payload is the message's whole payload. A record that
// does not fit even without a payload is returned as it is; publishing it
// fails and the job is redelivered.
func fitRecord(out Output, key string, rec *DeadLetter, payload, data []byte) ([]byte, error) {
	lim, ok := out.(RecordLimiter)
	if !ok {
		return data, nil
	}
	limit := len(rec.Payload)
	if rec.PayloadBase64 != "" {
		limit = base64.StdEncoding.DecodedLen(len(rec.PayloadBase64))
	}
	limit = min(limit, len(payload))
	maxBytes := lim.MaxRecordBytes(key)
	if len(data) <= maxBytes {
		return data, nil
	}
	text := utf8.Valid(payload)
	encode := func(n int) (DeadLetter, []byte, error) {
		for text && n > 0 && n < len(payload) && !utf8.RuneStart(payload[n]) {
			n-- // keep text as text: a cut rune would make it base64
		}
		r := *rec
		r.Payload, r.PayloadBase64 = "", ""
		r.setPayload(payload, n)
		r.PayloadTruncated = true
		b, err := json.Marshal(r)
		return r, b, err
	}
	// The longest prefix whose record fits: the encoding of a payload
	// grows with its length by a factor that depends on its bytes
	// (escapes, base64), so search for it.
	bestRec, best, err := encode(0)
	if err != nil {
		return nil, err
	}
	if len(best) > maxBytes {
		return data, nil // does not fit even without a payload
	}
	for lo, hi := 1, limit-1; lo <= hi; {
		mid := lo + (hi-lo)/2
		r, b, err := encode(mid)
		if err != nil {
			return nil, err
		}
		if len(b) <= maxBytes {
			bestRec, best, lo = r, b, mid+1
		} else {
			hi = mid - 1
		}
	}
	*rec = bestRec
	return best, nil
}
