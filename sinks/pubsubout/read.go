package pubsubout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Record is one record read back from a subscription.
type Record struct {
	Key        string // the KeyAttribute attribute
	Data       []byte
	Attributes map[string]string
	ackID      string
}

// Reader reads the records kept in a subscription (Config.SubscriptionName)
// with unary Pulls. Records it hands out stay leased to it until Remove
// acknowledges them or Release hands the rest back, so one pass sees each
// record once. It is not safe for concurrent use.
type Reader struct {
	client *pubsub.Client
	sub    string
	wait   time.Duration
	lease  int32 // seconds
	held   map[string]bool
}

// DefaultReadWait is how long one Pull of a Reader waits for records.
const DefaultReadWait = 5 * time.Second

// readLease is the ack deadline a Reader keeps on the records it read, in
// seconds: Pub/Sub's maximum, so a long pass does not see a record twice.
const readLease = 600

// NewReader returns a Reader of the subscription sub (a full name). A Pull
// that finds nothing within wait (0: DefaultReadWait) ends a pass.
func NewReader(client *pubsub.Client, sub string, wait time.Duration) *Reader {
	if wait <= 0 {
		wait = DefaultReadWait
	}
	return &Reader{client: client, sub: sub, wait: wait, lease: readLease, held: map[string]bool{}}
}

// Each pulls the records available and calls fn with each, in the order
// Pub/Sub hands them out, until a Pull finds none within the Reader's wait
// or fn returns an error (which Each returns).
func (r *Reader) Each(ctx context.Context, fn func(Record) error) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		rms, err := r.pull(ctx)
		if err != nil || len(rms) == 0 {
			return err
		}
		ids := make([]string, len(rms))
		for i, rm := range rms {
			ids[i] = rm.GetAckId()
			r.held[ids[i]] = true
		}
		err = r.client.SubscriptionAdminClient.ModifyAckDeadline(ctx, &pubsubpb.ModifyAckDeadlineRequest{
			Subscription: r.sub, AckIds: ids, AckDeadlineSeconds: r.lease})
		if err != nil {
			return fmt.Errorf("pubsubout: lease records of %s: %w", r.sub, err)
		}
		for _, rm := range rms {
			m := rm.GetMessage()
			rec := Record{Key: m.GetAttributes()[KeyAttribute], Data: m.GetData(), Attributes: m.GetAttributes(), ackID: rm.GetAckId()}
			if err := fn(rec); err != nil {
				return err
			}
		}
	}
}

// pull asks for up to 256 records and waits up to r.wait for some; an
// empty answer or the wait ending returns none.
func (r *Reader) pull(ctx context.Context) ([]*pubsubpb.ReceivedMessage, error) {
	pctx, cancel := context.WithTimeout(ctx, r.wait)
	defer cancel()
	resp, err := r.client.SubscriptionAdminClient.Pull(pctx, &pubsubpb.PullRequest{Subscription: r.sub, MaxMessages: 256})
	switch {
	case err == nil:
		return resp.GetReceivedMessages(), nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case pctx.Err() != nil || status.Code(err) == codes.DeadlineExceeded:
		return nil, nil
	case status.Code(err) == codes.NotFound:
		return nil, fmt.Errorf("pubsubout: subscription %s does not exist: records published before it was made are lost; create it on the topic (setup: true does)", r.sub)
	}
	return nil, fmt.Errorf("pubsubout: pull %s: %w", r.sub, err)
}

// Remove acknowledges rec: the subscription no longer keeps it.
func (r *Reader) Remove(ctx context.Context, rec Record) error {
	if rec.ackID == "" {
		return errors.New("pubsubout: remove: the record was not read by a Reader")
	}
	err := r.client.SubscriptionAdminClient.Acknowledge(ctx, &pubsubpb.AcknowledgeRequest{Subscription: r.sub, AckIds: []string{rec.ackID}})
	if err != nil {
		return fmt.Errorf("pubsubout: acknowledge a record of %s: %w", r.sub, err)
	}
	delete(r.held, rec.ackID)
	return nil
}

// Release hands back at once the records read and not removed, so the
// subscription offers them again.
func (r *Reader) Release(ctx context.Context) error {
	if len(r.held) == 0 {
		return nil
	}
	ids := make([]string, 0, len(r.held))
	for id := range r.held {
		ids = append(ids, id)
	}
	err := r.client.SubscriptionAdminClient.ModifyAckDeadline(ctx, &pubsubpb.ModifyAckDeadlineRequest{
		Subscription: r.sub, AckIds: ids, AckDeadlineSeconds: 0})
	if err != nil {
		return fmt.Errorf("pubsubout: release records of %s: %w", r.sub, err)
	}
	clear(r.held)
	return nil
}
