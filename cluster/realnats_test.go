package cluster

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit"
)

// TestRealNATS runs two members with leases against the server at
// NATS_URL (an older server, say: the bucket relies on max age only), in a
// bucket of its own that it deletes at the end. Skipped without NATS_URL.
func TestRealNATS(t *testing.T) {
	url := os.Getenv("NATS_URL")
	if url == "" {
		t.Skip("NATS_URL not set")
	}
	cfg := Config{Bucket: uniqueBucket(t), TTL: 2 * time.Second, Partitions: 8}
	js := connect(t, url)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := js.DeleteKeyValue(ctx, cfg.Bucket); err != nil {
			t.Errorf("delete bucket %s: %v", cfg.Bucket, err)
		}
	})
	var ls []*Leases
	var ms []*Membership
	var stops []func()
	for _, id := range []string{"a", "b"} {
		c := cfg
		c.ID = id
		m, err := Join(t.Context(), connect(t, url), c)
		if err != nil {
			t.Fatal(err)
		}
		l, err := NewLeases(t.Context(), m)
		if err != nil {
			t.Fatal(err)
		}
		stops = append(stops, runUntilCleanup(t, m.Run), runUntilCleanup(t, l.Run))
		ms, ls = append(ms, m), append(ls, l)
	}
	testkit.Eventually(t, "4 partitions each", func() bool {
		return ms[0].Count() == 2 && ms[1].Count() == 2 && len(ls[0].Held()) == 4 && len(ls[1].Held()) == 4
	})
	if hasCommon(ls[0].Held(), ls[1].Held()) {
		t.Errorf("a partition held twice: %v, %v", ls[0].Held(), ls[1].Held())
	}
	stops[1]() // a releases its leases, then leaves
	stops[0]()
	testkit.Eventually(t, "b alone with every partition", func() bool { return ms[1].Count() == 1 && len(ls[1].Held()) == 8 })
	for _, stop := range stops[2:] {
		stop()
	}
}
