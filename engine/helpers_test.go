package engine_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/resources"
	"github.com/bowline-iot/bowline/internal/testkit"
)

var tenantSeq atomic.Int64

// newTenant returns a tenant name no other test uses.
func newTenant(t *testing.T) string {
	t.Helper()
	return fmt.Sprintf("t%d-%d", time.Now().UnixNano()%1e9, tenantSeq.Add(1))
}

// countingClient counts TransactWriteItems calls and can hold the first one
// until released.
type countingClient struct {
	*dynamodb.Client
	txCalls atomic.Int64

	mu    sync.Mutex
	gate  chan struct{} // if set, the next TransactWriteItems waits on it
	sizes []int         // number of event rows in each call
}

func (c *countingClient) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.txCalls.Add(1)
	c.mu.Lock()
	gate := c.gate
	c.gate = nil
	events := 0
	for _, it := range in.TransactItems {
		if it.Put != nil && engine.IsEventItem(it.Put.Item) {
			events++
		}
	}
	c.sizes = append(c.sizes, events)
	c.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return c.Client.TransactWriteItems(ctx, in, opts...)
}

type fixture struct {
	names  resources.Names
	client *countingClient
	engine *engine.Engine
}

func newFixture(t *testing.T, cat engine.Catalog, tune func(*engine.Config)) *fixture {
	t.Helper()
	cfg := lstest.AWSConfig(t)
	names := lstest.Names(t)
	client := &countingClient{Client: dynamodb.NewFromConfig(cfg, quietLocal)}
	ec := engine.Config{
		Client:      client,
		EventsTable: names.EventsTable(),
		InboxTable:  names.InboxTable(),
		Catalog:     cat,
		Logger:      testkit.Logger(t, slog.LevelInfo),
	}
	if tune != nil {
		tune(&ec)
	}
	e, err := engine.New(ec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return &fixture{names: names, client: client, engine: e}
}

func ctxFor(t *testing.T, tenant string) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second) // hang guard
	t.Cleanup(cancel)
	return engine.WithActor(engine.WithTenant(ctx, tenant), "tester")
}

// events reads tenant's log straight from the table.
func (f *fixture) events(t *testing.T, tenant string) []engine.Envelope {
	t.Helper()
	var out []engine.Envelope
	p := dynamodb.NewQueryPaginator(f.client.Client, &dynamodb.QueryInput{
		TableName:                 aws.String(f.names.EventsTable()),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: engine.EventPK(tenant)}},
		ConsistentRead:            aws.Bool(true),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("query events of %s: %v", tenant, err)
		}
		for _, it := range page.Items {
			env, err := engine.DecodeItem(it)
			if err != nil {
				t.Fatalf("decode event of %s: %v", tenant, err)
			}
			out = append(out, env)
		}
	}
	return out
}

func (f *fixture) getItem(t *testing.T, table string, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	t.Helper()
	out, err := f.client.Client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatalf("get item from %s: %v", table, err)
	}
	return out.Item
}

func (f *fixture) verify(t *testing.T, tenant string) engine.ChainReport {
	t.Helper()
	rep, err := f.engine.VerifyChain(context.Background(), tenant)
	if err != nil {
		t.Fatalf("VerifyChain(%s): %v", tenant, err)
	}
	return rep
}

func sv(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func appKey(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": sv(pk), "sk": sv("ROW")}
}

func putApp(table, pk string, cond string) engine.Write {
	p := &types.Put{TableName: aws.String(table), Item: map[string]types.AttributeValue{"pk": sv(pk), "sk": sv("ROW"), "status": sv("new")}}
	if cond != "" {
		p.ConditionExpression = aws.String(cond)
	}
	return engine.Write{Put: p}
}

// quietLocal is awsenv.DynamoDBOptions: see there.
var quietLocal = awsenv.DynamoDBOptions
