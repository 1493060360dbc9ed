package recordchange

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/enginetest"
	"github.com/bowline-iot/bowline/engine/relay"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
)

func TestMain(m *testing.M) { lstest.Main(m, localstack.DynamoDB, localstack.SQS) }

// TestAppTableChangesReachBestEffortHandlers: an order row inserted,
// modified and removed in the app table reaches a BEST_EFFORT subscriber as
// row.order.insert, row.order.modify and row.order.remove through the
// record-changes pipe and queue, in the row's tenant context.
func TestAppTableChangesReachBestEffortHandlers(t *testing.T) {
	ctx := enginetest.Ctx(t)
	cfg := lstest.AWSConfig(t)
	names := lstest.Names(t)
	ddb := dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions)
	sq := sqs.NewFromConfig(cfg)
	queue := enginetest.StandardQueue(t, "rc")
	log := slog.New(slog.DiscardHandler)

	r, err := relay.New(relay.Config{
		Pipe: withName(relay.RecordChangesPipe, "rc-"+ulid.Make().String()), Streams: dynamodbstreams.NewFromConfig(cfg),
		Table: names.AppTable(), Tables: ddb, Queue: sq, QueueURL: queue,
		Checkpoints: ddb, CheckpointTable: names.InboxTable(), PollInterval: 50 * time.Millisecond, Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[string]string{} // type -> tenant from context
	order := "ORDER#" + ulid.Make().String()
	c, err := New(Config{Queue: sq, QueueURL: queue, WaitTime: time.Second, Logger: log, Subscriptions: []engine.Subscription{{
		Name: "order_projection", Pattern: "row.order.*", Lane: engine.BestEffort,
		Handler: func(ctx context.Context, env engine.Envelope) error {
			keys, _ := env.Payload["keys"].(map[string]any)
			if keys["pk"] != order {
				return nil
			}
			tn, _ := engine.Tenant(ctx)
			mu.Lock()
			got[env.Type] = tn
			mu.Unlock()
			return nil
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.Run(runCtx) })
	wg.Go(func() { _ = c.Run(runCtx) })
	defer func() { stop(); wg.Wait() }()

	key := map[string]types.AttributeValue{"pk": s(order), "sk": s("ORDER")}
	_, err = ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(names.AppTable()), Item: map[string]types.AttributeValue{
		"pk": s(order), "sk": s("ORDER"), "tenant": s("t1"), "status": s("pending_payment"),
	}})
	must(t, err)
	_, err = ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(names.AppTable()), Key: key,
		UpdateExpression: aws.String("SET #s = :p"), ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("paid")}})
	must(t, err)
	_, err = ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(names.AppTable()), Key: key})
	must(t, err)

	want := map[string]string{"row.order.insert": "t1", "row.order.modify": "t1", "row.order.remove": "t1"}
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		done := len(got) == len(want)
		mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: got %v; want %v", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for typ, tn := range want {
		if got[typ] != tn {
			t.Errorf("%s tenant = %q; want %q", typ, got[typ], tn)
		}
	}
}

func withName(p relay.PipeSpec, name string) relay.PipeSpec { p.Name = name; return p }

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
