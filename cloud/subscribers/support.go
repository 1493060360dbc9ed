package subscribers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/attr"
)

// supportWindow is one bowl's device-fault window, as its row holds it.
type supportWindow struct {
	start    time.Time
	eventID  string // the fault whose e-mail opened the window
	reported int64  // faults coalesced in the previous window, told in that e-mail
}

// openSupportWindow decides whether the fault env is e-mailed to support:
// at most one e-mail per bowl per SupportWindow, the faults in between
// counted on the bowl's row (docs/security.md, "Device faults"). It
// returns send true with the number of faults coalesced since the last
// e-mail, or send false when the fault was counted in an open window. A
// rerun of the fault that opened the window (a retried or redelivered
// handler) sends again, with the same count: the notifier drops the
// duplicate by its idempotency key. A rerun of a counted fault counts it
// again, so the count is at least the faults coalesced.
func (s *Set) openSupportWindow(ctx context.Context, env engine.Envelope) (send bool, coalesced int64, err error) {
	bowl := faultSource(env)
	key := supportKey(env.Tenant, bowl)
	for range 3 { // a window that ends between the reads is tried again
		now := s.cfg.Now()
		out, err := s.cfg.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.cfg.Names.AppTable()), Key: key,
			// SET reads the old item: reported takes the closing window's count.
			UpdateExpression: aws.String("SET entity = :e, tenant = :t, bowl = :b, window_start = :now, " +
				"event_id = :id, reported = if_not_exists(coalesced, :zero), coalesced = :zero"),
			ConditionExpression: aws.String("attribute_not_exists(window_start) OR window_start <= :cutoff"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":e": attr.S(EntitySupportWindow), ":t": attr.S(env.Tenant), ":b": attr.S(bowl),
				":now": attr.N(now.UnixMilli()), ":cutoff": attr.N(now.Add(-s.cfg.SupportWindow).UnixMilli()),
				":id": attr.S(env.ID), ":zero": attr.N(0),
			},
			ReturnValues: types.ReturnValueUpdatedNew,
		})
		var ccf *types.ConditionalCheckFailedException
		switch {
		case err == nil:
			return true, attr.GetN(out.Attributes, "reported"), nil
		case !errors.As(err, &ccf):
			return false, 0, fmt.Errorf("open the support window of bowl %q (tenant %s): %w", bowl, env.Tenant, err)
		}
		w, err := s.readSupportWindow(ctx, key)
		if err != nil {
			return false, 0, err
		}
		if w.eventID == env.ID {
			return true, w.reported, nil // this fault opened the window: a rerun
		}
		_, err = s.cfg.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.cfg.Names.AppTable()), Key: key,
			UpdateExpression:    aws.String("ADD coalesced :one"),
			ConditionExpression: aws.String("window_start = :ws"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":one": attr.N(1), ":ws": attr.N(w.start.UnixMilli()),
			},
		})
		if errors.As(err, &ccf) {
			continue // the window closed and another fault opened the next
		}
		if err != nil {
			return false, 0, fmt.Errorf("count a fault of bowl %q (tenant %s): %w", bowl, env.Tenant, err)
		}
		return false, 0, nil
	}
	return false, 0, fmt.Errorf("support window of bowl %q (tenant %s): changed under three tries", bowl, env.Tenant)
}

func (s *Set) readSupportWindow(ctx context.Context, key map[string]types.AttributeValue) (supportWindow, error) {
	out, err := s.cfg.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.cfg.Names.AppTable()), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return supportWindow{}, fmt.Errorf("read support window %s: %w", attr.GetS(key, "pk"), err)
	}
	return supportWindow{
		start:    time.UnixMilli(attr.GetN(out.Item, "window_start")),
		eventID:  attr.GetS(out.Item, "event_id"),
		reported: attr.GetN(out.Item, "reported"),
	}, nil
}

// faultSource names the bowl a fault came from: the device ingest
// authenticated it as (the actor "device:<thing>"), else the actor.
func faultSource(env engine.Envelope) string {
	return strings.TrimPrefix(env.Actor, "device:")
}
