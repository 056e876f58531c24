package sinks_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/sinks"
)

func TestDiscard(t *testing.T) {
	var o sinks.Output = sinks.Discard{}
	if err := o.Publish(context.Background(), "k", []byte("x")); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := o.Publish(ctx, "k", nil); err != context.Canceled {
		t.Fatalf("Publish on a done context = %v; want context.Canceled", err)
	}
	if err := o.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}
