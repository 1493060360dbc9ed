package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ErrLeaseLost means this process no longer holds its client-id slot: it
// stopped consuming, and Run returns it so the process exits and its
// replacement leases a slot afresh.
var ErrLeaseLost = errors.New("ingest: slot lease lost")

// LeaseDB is the part of DynamoDB the slot lease uses; safe for concurrent
// use.
type LeaseDB interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

// slotLease is one ingest process's hold on a client-id slot of its group
// (docs/ingest-sessions.md). The row (keys.go, leaseKey) names the owner and
// when the hold expires by the writer's clock; anyone may take a row whose
// expiry passed, only the owner may renew or release it. The holder
// considers the lease lost once it could not renew for 3/4 of the TTL, so
// it stops consuming a quarter TTL before anyone else may take the slot.
type slotLease struct {
	db    LeaseDB
	table string
	group string
	owner string
	slots int
	ttl   time.Duration
	now   func() time.Time
	log   *slog.Logger

	slot int

	mu    sync.Mutex
	until time.Time // local deadline: the lease is ours until then
	lost  bool      // keep gave up, or release ran
}

// held reports whether the lease is still ours by the local deadline.
func (l *slotLease) held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.now().Before(l.until)
}

// acquire takes the first free slot, waiting (polling every TTL/4) while
// all slots are held by live owners, until ctx ends.
func (l *slotLease) acquire(ctx context.Context) error {
	waiting := false
	for {
		for slot := range l.slots {
			start := l.now()
			err := l.put(ctx, slot, start, "attribute_not_exists(pk) OR expires_at < :now OR #owner = :owner")
			var ccf *types.ConditionalCheckFailedException
			if errors.As(err, &ccf) {
				continue
			}
			if err != nil {
				l.log.Warn("ingest slot lease: write failed; retrying", "group", l.group, "slot", slot, "err", err)
				continue
			}
			l.slot = slot
			l.extend(start)
			return nil
		}
		if !waiting {
			l.log.Warn("every ingest slot of the group is leased by a live process; waiting for one to expire or be released", "group", l.group, "slots", l.slots, "owner", l.owner)
			waiting = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ingest: lease a slot of group %q (%d slots): %w", l.group, l.slots, ctx.Err())
		case <-time.After(l.ttl / 4):
		}
	}
}

// extend moves the local deadline to 3/4 TTL after start, the moment the
// successful write was sent.
func (l *slotLease) extend(start time.Time) {
	l.mu.Lock()
	l.until = start.Add(l.ttl * 3 / 4)
	l.mu.Unlock()
}

// keep renews the lease every TTL/4 until ctx ends. It returns
// ErrLeaseLost when another owner took the slot, or when the local deadline
// passed without a successful renewal (each renewal may take only until
// that deadline); the caller must stop consuming at once.
func (l *slotLease) keep(ctx context.Context) error {
	t := time.NewTicker(l.ttl / 4)
	defer t.Stop()
	for {
		l.mu.Lock()
		until := l.until
		l.mu.Unlock()
		deadline := time.NewTimer(time.Until(until))
		select {
		case <-ctx.Done():
			deadline.Stop()
			return nil
		case <-deadline.C:
			l.lose()
			return fmt.Errorf("%w: slot %d of group %q not renewed within %s", ErrLeaseLost, l.slot, l.group, l.ttl*3/4)
		case <-t.C:
			deadline.Stop()
		}
		start := l.now()
		rctx, cancel := context.WithDeadline(ctx, until)
		err := l.put(rctx, l.slot, start, "#owner = :owner")
		cancel()
		var ccf *types.ConditionalCheckFailedException
		switch {
		case errors.As(err, &ccf):
			l.lose()
			return fmt.Errorf("%w: slot %d of group %q now has another owner", ErrLeaseLost, l.slot, l.group)
		case err == nil:
			l.extend(start)
		case ctx.Err() != nil:
			return nil
		default:
			l.log.Warn("ingest slot lease: renewal failed; retrying", "group", l.group, "slot", l.slot, "err", err)
		}
	}
}

// lose marks the lease lost for good.
func (l *slotLease) lose() {
	l.mu.Lock()
	l.until, l.lost = time.Time{}, true
	l.mu.Unlock()
}

// active reports whether the lease has not been lost (or released): a late
// renewal never revives it, but a slow one does not end it either.
func (l *slotLease) active() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.lost
}

// release gives the slot up at once (expiry 0), if it is still ours, so the
// next process need not wait for the TTL.
func (l *slotLease) release(ctx context.Context) error {
	l.lose()
	err := l.put(ctx, l.slot, time.Unix(0, 0).Add(-l.ttl), "#owner = :owner")
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil // not ours any more: nothing to release
	}
	return err
}

// put writes slot's row owned by l.owner, expiring TTL after at, on cond.
func (l *slotLease) put(ctx context.Context, slot int, at time.Time, cond string) error {
	item := leaseKey(l.group, slot)
	item["entity"] = &types.AttributeValueMemberS{Value: LeaseEntity}
	item["owner"] = &types.AttributeValueMemberS{Value: l.owner}
	item["client_id"] = &types.AttributeValueMemberS{Value: slotClientID(l.group, slot)}
	item["expires_at"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(at.Add(l.ttl).UnixMilli(), 10)}
	item["updated_at"] = &types.AttributeValueMemberS{Value: l.now().UTC().Format(time.RFC3339Nano)}
	values := map[string]types.AttributeValue{":owner": &types.AttributeValueMemberS{Value: l.owner}}
	if strings.Contains(cond, ":now") { // DynamoDB refuses unused values
		values[":now"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(l.now().UnixMilli(), 10)}
	}
	_, err := l.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(l.table),
		Item:                      item,
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  map[string]string{"#owner": "owner"},
		ExpressionAttributeValues: values,
	})
	if err != nil {
		return fmt.Errorf("lease slot %d of ingest group %q for %s: %w", slot, l.group, l.owner, err)
	}
	return nil
}
