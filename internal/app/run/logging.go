package run

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strconv"

	"golang.org/x/term"

	"github.com/sluicehq/sluice/internal/app/config"
)

// NewLogger builds the process logger on w: text when format is "text", or
// "auto" and w is a terminal; JSON otherwise. Attribute keys are fixed (job,
// type, status, units, err, ...); no header value or credential is ever
// logged. Durations read as Go durations in text ("1.5s") and as seconds in
// JSON (1.5); floats are rounded to 6 significant digits (see readable).
func NewLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	lvl, err := config.ParseLogLevel(level)
	if err != nil {
		return nil, err
	}
	text := slog.HandlerOptions{Level: lvl, ReplaceAttr: readable(false)}
	json := slog.HandlerOptions{Level: lvl, ReplaceAttr: readable(true)}
	switch format {
	case config.LogFormatText:
		return slog.New(slog.NewTextHandler(w, &text)), nil
	case config.LogFormatJSON:
		return slog.New(slog.NewJSONHandler(w, &json)), nil
	case config.LogFormatAuto, "":
		if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			return slog.New(slog.NewTextHandler(w, &text)), nil
		}
		return slog.New(slog.NewJSONHandler(w, &json)), nil
	}
	return nil, fmt.Errorf("log.format: must be auto, text or json, got %q", format)
}

// readable returns the ReplaceAttr of the process logger. A duration is a
// number of seconds in JSON (slog would write nanoseconds), rounded to the
// microsecond; text keeps its Go form ("1m40s"). A float (a rate, a share)
// is rounded to 6 significant digits, never into its integer part, so that
// a rate of 2000/3 units per minute reads 666.667 and not
// 666.6666666666666, and 99.99999999999999 reads 100; text writes it in
// decimal, never with an exponent.
func readable(json bool) func([]string, slog.Attr) slog.Attr {
	return func(_ []string, a slog.Attr) slog.Attr {
		switch a.Value.Kind() {
		case slog.KindDuration:
			if json {
				a.Value = slog.Float64Value(math.Round(a.Value.Duration().Seconds()*1e6) / 1e6)
			}
		case slog.KindFloat64:
			r := roundFloat(a.Value.Float64())
			if json {
				a.Value = slog.Float64Value(r)
			} else { // in decimal: slog would write 1.234568e+06
				a.Value = slog.StringValue(strconv.FormatFloat(r, 'f', -1, 64))
			}
		}
		return a
	}
}

// roundFloat rounds v to 6 significant digits, or to its integer digits
// when it has more.
func roundFloat(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) || v == 0 {
		return v
	}
	digits := max(6, int(math.Floor(math.Log10(math.Abs(v))))+1)
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', digits, 64), 64)
	if err != nil {
		return v
	}
	return r
}
