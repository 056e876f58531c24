package replay

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// replayTrace replays a trace whose options use the names of the config
// file's limiter section, decoded as `sluice limiter replay` decodes them.
func replayTrace(r io.Reader, w io.Writer) error {
	return Replayer{Decode: DecodeOptions}.Run(r, w)
}

// TestReplayWithoutDecode checks that a Replayer with no Decode replays a
// trace with empty options at the defaults, and names the line of options
// it cannot decode.
func TestReplayWithoutDecode(t *testing.T) {
	var out bytes.Buffer
	if err := Replay(strings.NewReader(`{"options": {}}`+"\n"+`{"at": 0, "op": "tick"}`), &out); err != nil {
		t.Fatal(err)
	}
	if want := `"rate": 600`; !strings.Contains(out.String(), want) {
		t.Errorf("output %s, want the default rate (%s)", out.String(), want)
	}
	for in, msg := range map[string]string{
		`{"options": {"burst": "1s"}}`: "only {} is accepted",
		`{"options": []}`:              "must be an object",
	} {
		err := Replay(strings.NewReader(in), io.Discard)
		var le *LineError
		if !errors.As(err, &le) || le.Line != 1 || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: err = %v, want line 1 and %q", in, err, msg)
		}
	}
}
