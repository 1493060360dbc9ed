package reconcile

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/enginetest"
	"github.com/bowline-iot/bowline/engine/inbox"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
)

func TestMain(m *testing.M) { lstest.Main(m, localstack.DynamoDB, localstack.SQS) }

// TestReconcileReportsEveryKindOfUndoneWork: an intact tenant, a tampered
// one, an open and a redriven dead letter, a poison pill, a message in the
// DLQ and an unmatched event each show up as a number.
func TestReconcileReportsEveryKindOfUndoneWork(t *testing.T) {
	ctx := enginetest.Ctx(t)
	cfg := lstest.AWSConfig(t)
	names := lstest.Names(t)
	ddb := dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions)
	sq := sqs.NewFromConfig(cfg)
	q := enginetest.FIFOQueues(t, "reconcile", 5*time.Second, 5)
	good, bad := "good-"+suffix(), "bad-"+suffix()
	for _, tn := range []string{good, bad} {
		env := enginetest.Envelope(t, tn, "bowl.refilled", 1, nil)
		if err := enginetest.PutEventRow(ctx, ddb, names.EventsTable(), env); err != nil {
			t.Fatal(err)
		}
	}
	// Tamper with bad's only event.
	_, err := ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(names.EventsTable()),
		Key: map[string]types.AttributeValue{
			engine.AttrPK: &types.AttributeValueMemberS{Value: engine.EventPK(bad)},
			engine.AttrSK: &types.AttributeValueMemberS{Value: engine.SeqSK(1)},
		},
		UpdateExpression:          aws.String("SET #a = :a"),
		ExpressionAttributeNames:  map[string]string{"#a": engine.AttrActor},
		ExpressionAttributeValues: map[string]types.AttributeValue{":a": &types.AttributeValueMemberS{Value: "mallory"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	dl, _ := deadletter.New(ddb, names.DeadLettersTable(), nil)
	must(t, dl.Record(ctx, deadletter.Letter{Tenant: good, EventID: "e1", Subscription: "notify_owner", Error: "x"}))
	must(t, dl.Record(ctx, deadletter.Letter{Tenant: good, EventID: "e2", Subscription: "notify_owner", Error: "x"}))
	must(t, dl.MarkRedriven(ctx, good, "e2", "notify_owner"))
	must(t, dl.RecordPoison(ctx, deadletter.Letter{MessageID: "m1", Body: "??", Error: "decode"}))
	must(t, dl.CountUnmatched(ctx, "com.order_created"))
	_, err = sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.DLQURL), MessageBody: aws.String("{}"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d")})
	must(t, err)

	rep, err := Reconcile(ctx, Config{Chains: engine.NewVerifier(ddb, names.EventsTable(), 100), DeadLetters: dl, Queue: sq, DLQURL: q.DLQURL})
	if err != nil {
		t.Fatal(err)
	}
	byTenant := map[string]Tenant{}
	for _, tr := range rep.Tenants {
		byTenant[tr.Tenant] = tr
	}
	if g := byTenant[good]; !g.ChainIntact || g.Events != 1 || g.DeadLetters != 1 {
		t.Errorf("good tenant = %+v; want intact, 1 event, 1 open dead letter", g)
	}
	if b := byTenant[bad]; b.ChainIntact || b.FirstBadSeq != 1 {
		t.Errorf("tampered tenant = %+v; want broken at seq 1", b)
	}
	if rep.DeadLetters != 1 || rep.PoisonPills != 1 || rep.DLQDepth != 1 || rep.Unmatched != 1 || rep.OK() {
		t.Errorf("report = %+v; want 1 open dead letter, 1 poison pill, DLQ depth 1, 1 unmatched, not OK", rep)
	}
}

func suffix() string { return strings.ToLower(ulid.Make().String()[16:]) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestInboxCheckCountsUnsettledWork: of an event's two DURABLE
// subscriptions, one has a completed inbox row and one has none; after the
// grace period the one without is unsettled, inside it nothing is.
func TestInboxCheckCountsUnsettledWork(t *testing.T) {
	ctx := enginetest.Ctx(t)
	cfg := lstest.AWSConfig(t)
	names := lstest.Names(t)
	ddb := dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions)
	tenant := "unsettled-" + suffix()
	env := enginetest.Envelope(t, tenant, "com.payment_completed", 1, nil)
	must(t, enginetest.PutEventRow(ctx, ddb, names.EventsTable(), env))
	_, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(names.InboxTable()), Item: map[string]types.AttributeValue{
		"pk":     &types.AttributeValueMemberS{Value: inbox.Key(env.ID, "shopify_mirror")},
		"status": &types.AttributeValueMemberS{Value: string(inbox.Completed)},
	}})
	must(t, err)
	subs := []engine.Subscription{
		{Name: "shopify_mirror", Pattern: "com.payment_completed", Lane: engine.Durable},
		{Name: "book_shipment", Pattern: "com.payment_completed", Lane: engine.Durable},
		{Name: "audit", Pattern: "com.*", Lane: engine.BestEffort},
	}
	check := InboxCheck{DB: ddb, EventsTable: names.EventsTable(), InboxTable: names.InboxTable(), Subscriptions: subs}
	for _, c := range []struct {
		now  time.Time
		want int
	}{{time.Now(), 0}, {time.Now().Add(time.Hour), 1}} {
		check.Now = func() time.Time { return c.now }
		got, err := check.Unsettled(ctx, tenant)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("Unsettled at %v = %d; want %d", c.now.Format(time.TimeOnly), got, c.want)
		}
	}
}
