package pubsubout

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// With CreateTopic the records are kept in a subscription made with the
// topic, and a Reader reads them back: removed ones are gone, the others
// are offered again on the next pass (#15).
func TestRecordsKeptAndRead(t *testing.T) {
	_, client := fakeClient(t)
	ctx := ctxT(t)
	cfg := Config{Topic: "dead", CreateTopic: true}
	o, err := New(ctx, client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	sub := cfg.SubscriptionName(project)
	if sub != "projects/"+project+"/subscriptions/dead-records" {
		t.Fatalf("subscription %s", sub)
	}
	var want []string
	for i := range 300 {
		k := fmt.Sprintf("job-%03d", i)
		want = append(want, k)
		if err := o.Publish(ctx, k, []byte(`{"id":"`+k+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	// A pass ends on an empty answer, which pstest gives after its own
	// half second. The reader's wait is only the bound for a server that
	// holds a pull longer: a pull it cuts short leaves what the server
	// leased to it with nobody until the lease ends, and a 256-record
	// answer took longer than 200 ms on a loaded machine.
	const wait = 5 * time.Second
	r := NewReader(client, sub, wait)
	var got, kept []string
	err = r.Each(ctx, func(rec Record) error {
		got = append(got, rec.Key)
		if string(rec.Data) != `{"id":"`+rec.Key+`"}` {
			t.Errorf("record %s: data %s", rec.Key, rec.Data)
		}
		if strings.HasSuffix(rec.Key, "7") {
			kept = append(kept, rec.Key)
			return nil
		}
		return r.Remove(ctx, rec)
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("first pass read %d records, want the %d published", len(got), len(want))
	}
	if err := r.Release(ctx); err != nil {
		t.Fatal(err)
	}
	var again []string
	if err := NewReader(client, sub, wait).Each(ctx, func(rec Record) error {
		again = append(again, rec.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(again)
	slices.Sort(kept)
	if !slices.Equal(again, kept) {
		t.Errorf("second pass read %v, want the %d records not removed", again, len(kept))
	}
}

// A subscription of that name on another topic is an error: the records
// would not be kept there.
func TestKeepSubscriptionOnAnotherTopic(t *testing.T) {
	_, client := fakeClient(t)
	ctx := ctxT(t)
	if _, err := New(ctx, client, Config{Topic: "other", CreateTopic: true, Subscription: "dead-keep"}); err != nil {
		t.Fatal(err)
	}
	_, err := New(ctx, client, Config{Topic: "dead", CreateTopic: true, Subscription: "dead-keep"})
	if err == nil || !strings.Contains(err.Error(), "exists on topic projects/"+project+"/topics/other") {
		t.Fatalf("New with the subscription on another topic: %v", err)
	}
	// Without CreateTopic nothing is created or checked.
	if _, err := New(ctx, client, Config{Topic: "dead", Subscription: "dead-keep"}); err != nil {
		t.Fatal(err)
	}
}

// Reading a subscription that does not exist says what that means.
func TestReaderMissingSubscription(t *testing.T) {
	_, client := fakeClient(t)
	ctx := ctxT(t)
	err := NewReader(client, "projects/"+project+"/subscriptions/nope", time.Second).Each(ctx, func(Record) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("Each on a missing subscription: %v", err)
	}
}

func TestSubscriptionName(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Topic: "dead"}, "projects/p/subscriptions/dead-records"},
		{Config{Topic: "projects/q/topics/dead"}, "projects/q/subscriptions/dead-records"},
		{Config{Topic: "dead", Subscription: "keep"}, "projects/p/subscriptions/keep"},
		{Config{Topic: "dead", Subscription: "projects/r/subscriptions/keep"}, "projects/r/subscriptions/keep"},
	} {
		if got := c.cfg.SubscriptionName("p"); got != c.want {
			t.Errorf("%+v: %s, want %s", c.cfg, got, c.want)
		}
	}
	if err := (Config{Topic: "t", Subscription: "projects/p/topics/t"}).Validate(); err == nil || !strings.Contains(err.Error(), "subscription: must be") {
		t.Errorf("a topic name as subscription: %v", err)
	}
}
