package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"golang.org/x/term"
)

// Log formats accepted in log.format and --log-format.
const (
	logFormatAuto = "auto" // text on a terminal, JSON otherwise
	logFormatText = "text"
	logFormatJSON = "json"
)

// parseLogLevel reads log.level: debug, info, warn or error.
func parseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("log.level: must be debug, info, warn or error, got %q", s)
}

// newLogger builds the process logger on w: text when format is "text", or
// "auto" and w is a terminal; JSON otherwise. Attribute keys are fixed (job,
// type, status, units, ...); no header value or credential is ever logged.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	lvl, err := parseLogLevel(level)
	if err != nil {
		return nil, err
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch format {
	case logFormatText:
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case logFormatJSON:
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case logFormatAuto, "":
		if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			return slog.New(slog.NewTextHandler(w, opts)), nil
		}
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log.format: must be auto, text or json, got %q", format)
}
