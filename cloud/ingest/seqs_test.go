package ingest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/deploy/cfn/iamtest"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// seqSpans reads the seq-tracking row of thing's lane: its spans, nil when
// there is no row.
func (e env) seqSpans(t *testing.T, thing, lane string) [][2]uint64 {
	t.Helper()
	out, err := e.ddb.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(lstest.Names(t).AppTable()),
		Key: map[string]ddbtypes.AttributeValue{
			"pk": &ddbtypes.AttributeValueMemberS{Value: ingest.GapPK(thing)},
			"sk": &ddbtypes.AttributeValueMemberS{Value: lane},
		},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	st, ok := out.Item["state"].(*ddbtypes.AttributeValueMemberS)
	if !ok {
		return nil
	}
	var s struct {
		Spans [][2]uint64 `json:"spans"`
	}
	if err := json.Unmarshal([]byte(st.Value), &s); err != nil {
		t.Fatalf("seq row of %s %s: %v", thing, lane, err)
	}
	return s.Spans
}

// dataGaps returns the tenant's bowl.data_gap events as "lane from-to".
func (e env) dataGaps(t *testing.T, tenant string) []string {
	t.Helper()
	var gaps []string
	for _, ev := range e.events(t, tenant) {
		if ev.Type == catalog.TypeDataGap {
			gaps = append(gaps, fmt.Sprintf("%v %v-%v", ev.Payload["lane"], ev.Payload["from_seq"], ev.Payload["to_seq"]))
		}
	}
	return gaps
}

// A rejected message used up its seqs: they are no gap. Rejections are
// dead-lettered, so the gateway never resends them. The ingest role must
// allow every AWS call of the event source and the seq rows (iamtest).
func TestRejectedMessagesAreNoGap(t *testing.T) {
	iamtest.Record(t)
	e := newEnv(t)
	tenant, thing := uniq("t"), uniq("bowl")
	e.register(t, thing, tenant)
	rec := newRecorder()
	e.startIngestOn(t, rec, func(c *ingest.Config) {
		c.GapGrace = 10 * time.Millisecond
		c.GapFlushInterval = 50 * time.Millisecond
	}, true)
	pub := e.publisher(t)
	for _, m := range []any{
		event(thing, 1, "empty-1", "bowl.empty", map[string]any{}),
		event(thing, 2, "nope-2", "bowl.no_such_type", map[string]any{}),                // rejected: unknown type
		event(thing, 3, "refill-3", "bowl.refilled", map[string]any{"grams_added": -5}), // rejected: invalid data
		event(thing, 4, "empty-4", "bowl.empty", map[string]any{}),
	} {
		publish(t, pub, topic(tenant, thing, "events"), m)
	}
	testkit.WaitFor(t, "4 acks", hangGuard, func() bool { return rec.ackCount() == 4 })
	testkit.WaitFor(t, "SEQ# row closed", hangGuard, func() bool {
		ev := e.seqSpans(t, thing, ingest.LaneEvents)
		return len(ev) == 1 && ev[0] == [2]uint64{1, 4}
	})
	if gaps := e.dataGaps(t, tenant); len(gaps) != 0 {
		t.Errorf("bowl.data_gap events = %v; want none (the missing seqs were rejected, not lost)", gaps)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if n := rec.rejected[ingest.ReasonInvalid] + rec.rejected[ingest.ReasonUnknownType]; n != 2 {
		t.Errorf("rejections = %v; want 2", rec.rejected)
	}
}
