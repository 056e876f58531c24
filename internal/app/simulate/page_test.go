package simulate

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/web"
)

// TestServePage: ServePage serves the page and its stream, and returns
// once its context ends even with a stream open.
func TestServePage(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var out strings.Builder
	go func() { done <- ServePage(ctx, ln, web.DefaultSimConfig(), &out) }()
	base := "http://" + ln.Addr().String()
	code, body := testkit.Get(t, base+"/")
	if code != 200 || !strings.Contains(body, "see it run") {
		t.Fatalf("GET /: %d", code)
	}
	res, err := http.Get(base + "/api/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	r := bufio.NewReader(res.Body)
	for frames := 0; frames < 3; {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == "event: frame\n" {
			frames++
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ServePage: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ServePage did not return within 30s of cancel with a stream open")
	}
	io.Copy(io.Discard, r) // the stream ended with the server
	if !strings.Contains(out.String(), "http://"+ln.Addr().String()) {
		t.Errorf("output %q does not give the address", out.String())
	}
}
