package console

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/attr"
	"github.com/bowline-iot/bowline/engine/inbox"
)

// workState is the state of one (event, subscription) as the inbox has it.
type workState struct {
	Subscription string
	// Status is "completed", "pending", "dead" or "" (no row: queued, not
	// yet claimed).
	Status    string
	Attempts  int
	LastError string
	Released  bool
}

// Word is the state as a person reads it: done, retrying, running, dead,
// redriven, queued.
func (s workState) Word() string {
	switch s.Status {
	case string(inbox.Completed):
		return "done"
	case string(inbox.Dead):
		if s.Released {
			return "redriven"
		}
		return "dead"
	case string(inbox.Pending):
		if s.LastError != "" {
			return "retrying"
		}
		return "running"
	}
	return "queued"
}

// durableSubs are the DURABLE subscriptions that owe work for typ.
func (c *Console) durableSubs(typ string) []string {
	var out []string
	for _, s := range engine.Match(c.cfg.Subscriptions, engine.Durable, typ) {
		out = append(out, s.Name)
	}
	return out
}

// workStates reads the inbox rows of every (event, subscription) pair
// with BatchGetItem, 100 keys a call; the answer is keyed by inbox.Key.
func (c *Console) workStates(ctx context.Context, pairs [][2]string) (map[string]workState, error) {
	out := make(map[string]workState, len(pairs))
	keys := make([]string, 0, len(pairs))
	for _, p := range pairs {
		k := inbox.Key(p[0], p[1])
		if _, dup := out[k]; !dup {
			out[k] = workState{Subscription: p[1]}
			keys = append(keys, k)
		}
	}
	table := c.cfg.Names.InboxTable()
	for len(keys) > 0 {
		batch := keys[:min(100, len(keys))]
		keys = keys[len(batch):]
		req := make([]map[string]types.AttributeValue, len(batch))
		for i, k := range batch {
			req[i] = attr.HashKey(k)
		}
		pending := map[string]types.KeysAndAttributes{table: {Keys: req, ConsistentRead: aws.Bool(true)}}
		for attempt := 0; len(pending) > 0; attempt++ {
			res, err := c.cfg.DB.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: pending})
			if err != nil {
				return nil, fmt.Errorf("read inbox rows: %w", err)
			}
			for _, it := range res.Responses[table] {
				k := attr.GetS(it, attr.PK)
				s := out[k]
				s.Status = attr.GetS(it, inbox.AttrStatus)
				s.Attempts = int(attr.GetN(it, "attempts"))
				s.LastError = attr.GetS(it, "last_error")
				_, s.Released = it["released_at"]
				out[k] = s
			}
			pending = res.UnprocessedKeys
			if len(pending) > 0 {
				sleep(ctx, time.Duration(attempt+1)*20*time.Millisecond)
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
			}
		}
	}
	return out, nil
}
