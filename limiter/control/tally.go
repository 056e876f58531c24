package control

import "time"

// tally is the law's record of the recent past, in bins of binWidth by send
// time: the units granted and the units the API accepted.
type tally struct {
	last      int64 // the newest bin written
	sent, acc [binCount]float64
}

func (s *tally) bin(t time.Duration) int64 { return int64(t / binWidth) }

// roll clears the bins after the newest one written, up to b.
func (s *tally) roll(b int64) {
	if b <= s.last {
		return
	}
	for i := s.last + 1; i <= b && i <= s.last+binCount; i++ {
		s.sent[i%binCount], s.acc[i%binCount] = 0, 0
	}
	s.last = b
}

// addSent counts u units granted at t; a grant before the tally's first
// bin or older than its record is dropped.
func (s *tally) addSent(t time.Duration, u float64) {
	b := s.bin(t)
	if b < 0 || b <= s.last-binCount {
		return
	}
	s.roll(b)
	s.sent[b%binCount] += u
}

// addAcc counts u units accepted of a request sent at sent; an answer to a
// request sent before the tally's first bin, after its newest or older
// than its record is dropped.
func (s *tally) addAcc(sent time.Duration, u float64) {
	b := s.bin(sent)
	if b < 0 || b > s.last || b <= s.last-binCount {
		return
	}
	s.acc[b%binCount] += u
}

// sum returns the units of v sent in [from, to), pro rata within the first
// and last bins.
func (s *tally) sum(v *[binCount]float64, from, to time.Duration) float64 {
	if to <= from {
		return 0
	}
	lo := max(s.bin(from), s.last-binCount+1, 0)
	hi := min(s.bin(to), s.last)
	var sum float64
	for b := lo; b <= hi; b++ {
		bs, be := time.Duration(b)*binWidth, time.Duration(b+1)*binWidth
		if f := float64(min(be, to)-max(bs, from)) / float64(binWidth); f > 0 {
			sum += v[b%binCount] * f
		}
	}
	return sum
}
