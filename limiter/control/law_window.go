package control

import (
	"math"
	"time"
)

// The law's W, the API's memory: where it comes from (the config, the
// quota headers, or the first refusal after an idle start, which the echo
// of the next may show to be a window), and when the API shows it is no
// window.

// windowSource says where the law's W came from: the first refusal after
// an idle start (learned again at the next), and the echo of the next when
// it showed a window of that W; the quota headers; or the config (never
// changed).
type windowSource uint8

const (
	fromRefusal windowSource = iota
	fromHeaders
	fromConfig
	fromEcho
)

// learning is what the next refusal learns of W: nothing, W itself (the
// first after an idle start) or whether the API is a window of it (the
// next, by its echo).
type learning uint8

const (
	learnNone learning = iota
	learnFirst
	learnEcho
)

// learned reports whether W came from the refusals, to be learned again
// at the next idle start or forgotten when the API shows it is no window.
func (w windowSource) learned() bool { return w == fromRefusal || w == fromEcho }

// Announce sets W to a window the API announced (a quota header's window
// or reset), unless the config set one.
func (l *Law) Announce(w time.Duration) {
	if w > 0 && l.wfrom != fromConfig {
		l.window, l.wfrom = min(w, MaxWindow), fromHeaders
	}
}

// falsify forgets a W that a refusal taught when the API has since taken
// more than any window of W could, at a refusal of a request sent at
// sent or at a raise at sent. At the last cutting refusal's send s the
// API was full; over the span d = sent − s a sliding window of W frees no
// more than it took in the windows before, and a fixed one refills at
// most ceil(d/W) times: neither takes more than ceil(d/W) times the units
// sent over the W before s. An API that did forgets faster (a leaky or
// token bucket, which the time since sending began is no window of), and
// W is unknown until the next idle start teaches it again. Once the
// record no longer holds the W before s, nothing is known either way.
func (l *Law) falsify(sent time.Duration) {
	s, w := l.refs[0], l.window
	if !l.wfrom.learned() || w <= 0 || s < w || sent <= s {
		return
	}
	if sent-(s-w) > binCount*binWidth {
		return
	}
	n := math.Ceil(float64(sent-s) / float64(w))
	if l.past.sum(&l.past.acc, s, sent) > (1+sameBound)*n*l.past.sum(&l.past.sent, s-w, s) {
		l.window = 0
	}
}

// echo checks, at the refusal of a request sent at sent, the W that the
// last refusal (sent at s1 = refs[0], the first after an idle start, which
// cut the rate) taught. Both refusals found the API full, and a sliding
// window frees between them exactly what it took one window before: when
// at some lag w the API had accepted, over [s1 − w, sent − w), at least
// what it accepted over [s1, sent), the API showed a window, and its
// climbs wait W at every step (raise). When that refusal named a wait
// beyond a second, W holds it: the API said when it frees, and lags within
// sameBound below W confirm it. When it named none, W is the span alone, an
// upper bound (a startup that fills a window slowly is refused first only
// some time after the window), and W becomes the longest such lag, tried
// down to sent − s1 and no lower than where the span back from s1 holds
// less than all but sameBound of what the API accepted over the W before
// s1: a startup is refused late when its first units were too few to fill
// the window, so the window held all but those few; a lag that leaves out
// more is no window it filled late. A leaky or token bucket, whose first
// refusal also ends a startup, took far more between them than at the
// start of that startup, and a fixed window waiting for its reset took
// nothing. Units of the bin of s1 are not counted as accepted after it:
// they were sent before the API was full.
func (l *Law) echo(sent time.Duration) {
	s1, W := l.refs[0], l.window
	if l.wfrom != fromRefusal || W <= 0 || s1 < 0 || sent <= s1 {
		return
	}
	took := l.past.sum(&l.past.acc, time.Duration(l.past.bin(s1)+1)*binWidth, sent)
	if took <= 0 {
		return
	}
	named := l.beyond(l.open-l.cut) > 0 // the first refusal's Retry-After
	least := max(sent-s1, time.Duration((1-sameBound)*float64(W)))
	var held float64 // what a lag's span back from s1 must hold
	if !named {
		least = max(sent-s1, binWidth)
		held = (1 - sameBound) * l.past.sum(&l.past.acc, s1-W, s1)
	}
	for w := W; w >= least; w -= binWidth {
		if !named && l.past.sum(&l.past.acc, s1-w, s1) < held {
			return
		}
		if l.past.sum(&l.past.acc, s1-w, sent-w) >= took {
			if l.wfrom = fromEcho; !named {
				l.window = w
			}
			return
		}
	}
}
