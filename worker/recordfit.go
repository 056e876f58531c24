package worker

import (
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"
)

// RecordLimiter is implemented by outputs that refuse a record over a size
// (a NATS server's max_payload). The worker cuts the payload of a
// dead-letter record (PayloadTruncated) or the body of a result record
// (BodyTruncated) to fit, so that a record too large for its output does
// not keep its job redelivered (and, for a result, the target called
// again) for ever.
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
	kept := len(rec.Payload)
	if rec.PayloadBase64 != "" {
		kept = base64.StdEncoding.DecodedLen(len(rec.PayloadBase64))
	}
	return fit(out, key, rec, payload, min(kept, len(payload)), data, func(r DeadLetter, n int) DeadLetter {
		r.Payload, r.PayloadBase64 = "", ""
		r.setPayload(payload, n)
		r.PayloadTruncated = true
		return r
	})
}

// fitResult is fitRecord for a result record: it cuts the response body.
func fitResult(out Output, key string, res *Result, body, data []byte) ([]byte, error) {
	return fit(out, key, res, body, len(body), data, func(r Result, n int) Result {
		r.setBody(body[:n])
		r.BodyTruncated = true
		return r
	})
}

// fit is fitRecord and fitResult: data is rec's encoding, p the bytes
// cut(rec, n) keeps a prefix of, and limit the longest prefix to try. On
// a fit, *rec becomes the cut record whose encoding is returned.
func fit[R any](out Output, key string, rec *R, p []byte, limit int, data []byte, cut func(r R, n int) R) ([]byte, error) {
	lim, ok := out.(RecordLimiter)
	if !ok {
		return data, nil
	}
	maxBytes := lim.MaxRecordBytes(key)
	if len(data) <= maxBytes {
		return data, nil
	}
	best := *rec
	enc, err := longestFit(p, limit, maxBytes, func(n int) ([]byte, error) {
		r := cut(*rec, n)
		b, err := json.Marshal(r)
		if err == nil && len(b) <= maxBytes {
			best = r
		}
		return b, err
	})
	if err != nil || enc == nil {
		return data, err
	}
	*rec = best
	return enc, nil
}

// longestFit finds the longest prefix of p, at most limit bytes, whose
// record encode(n) is at most maxBytes, and returns that record; nil when
// not even the empty prefix fits. A prefix of valid UTF-8 ends on a rune
// boundary, so that text stays text. The encoding of a prefix grows with
// its length by a factor that depends on its bytes (escapes, base64), so
// it searches.
func longestFit(p []byte, limit, maxBytes int, encode func(n int) ([]byte, error)) ([]byte, error) {
	text := utf8.Valid(p)
	at := func(n int) int {
		for text && n > 0 && n < len(p) && !utf8.RuneStart(p[n]) {
			n--
		}
		return n
	}
	best, err := encode(0)
	if err != nil {
		return nil, err
	}
	if len(best) > maxBytes {
		return nil, nil
	}
	for lo, hi := 1, limit-1; lo <= hi; {
		mid := lo + (hi-lo)/2
		b, err := encode(at(mid))
		if err != nil {
			return nil, err
		}
		if len(b) <= maxBytes {
			best, lo = b, mid+1
		} else {
			hi = mid - 1
		}
	}
	return best, nil
}
