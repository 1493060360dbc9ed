package subscribers_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/cloud/adapters"
	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/fakes"
	"github.com/bowline-iot/bowline/cloud/subscribers"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/resources"
	"github.com/bowline-iot/bowline/internal/testkit"
)

func TestMain(m *testing.M) { lstest.Main(m, localstack.DynamoDB, localstack.SQS) }

type fixture struct {
	t      *testing.T
	db     *dynamodb.Client
	eng    *engine.Engine
	names  resources.Names
	fakes  *fakes.Set
	set    *subscribers.Set
	h      map[string]engine.Handler
	tenant string
	// skew is added to the wall clock the handlers read (advance).
	skew atomic.Int64
}

// advance moves the handlers' clock forward by d.
func (f *fixture) advance(d time.Duration) { f.skew.Add(int64(d)) }

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// emitterFunc adapts a function to subscribers.Emitter.
type emitterFunc func(ctx context.Context, ev engine.Event) (engine.Envelope, error)

func (f emitterFunc) EmitEvent(ctx context.Context, ev engine.Event) (engine.Envelope, error) {
	return f(ctx, ev)
}

func newFixture(t *testing.T, wrap func(subscribers.Emitter) subscribers.Emitter) *fixture {
	t.Helper()
	cfg := lstest.AWSConfig(t)
	f := &fixture{t: t, names: lstest.Names(t), fakes: fakes.NewSet(), tenant: "t-" + randHex(4)}
	f.db = dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions)
	log := testkit.Logger(t, slog.LevelWarn)
	eng, err := engine.New(engine.Config{Client: f.db, EventsTable: f.names.EventsTable(), InboxTable: f.names.InboxTable(), Catalog: catalog.Bowline(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	f.eng = eng
	var urls [3]string
	for i, fk := range f.fakes.All() {
		srv := httptest.NewServer(fk)
		t.Cleanup(srv.Close)
		urls[i] = srv.URL
	}
	ad, err := adapters.New(adapters.Config{ShopifyURL: urls[0], ShippingURL: urls[1], NotifyURL: urls[2], Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var em subscribers.Emitter = eng
	if wrap != nil {
		em = wrap(eng)
	}
	f.set, err = subscribers.New(subscribers.Config{DB: f.db, Emitter: em, Names: f.names, Shop: ad.Shopify, Shipping: ad.Shipping, Notify: ad.Notify, Logger: log,
		Now: func() time.Time { return time.Now().Add(time.Duration(f.skew.Load())) }})
	if err != nil {
		t.Fatal(err)
	}
	f.h = f.set.Handlers()
	return f
}

// envelope builds an event as the worker hands it over.
func (f *fixture) envelope(typ string, payload map[string]any) engine.Envelope {
	return engine.Envelope{ID: ulid.Make().String(), Type: typ, Tenant: f.tenant, Actor: "test", OccurredAt: time.Now().UTC(), Payload: payload}
}

// run runs subscription sub on env in the event's context, as the worker does.
func (f *fixture) run(sub string, env engine.Envelope) error {
	f.t.Helper()
	h, ok := f.h[sub]
	if !ok {
		f.t.Fatalf("no handler %q", sub)
	}
	return h(engine.ContextFor(context.Background(), env), env)
}

func (f *fixture) events() []engine.Envelope {
	f.t.Helper()
	var evs []engine.Envelope
	for env, err := range engine.NewLog(f.db, f.names.EventsTable()).After(context.Background(), f.tenant, 0, engine.ReadOptions{}) {
		if err != nil {
			f.t.Fatal(err)
		}
		evs = append(evs, env)
	}
	return evs
}

func (f *fixture) get(pk, sk string) map[string]types.AttributeValue {
	f.t.Helper()
	out, err := f.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(f.names.AppTable()), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": s(pk), "sk": s(sk)},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return out.Item
}

func (f *fixture) put(item map[string]types.AttributeValue) {
	f.t.Helper()
	if _, err := f.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(f.names.AppTable()), Item: item}); err != nil {
		f.t.Fatal(err)
	}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

func attrS(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func attrN(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		return v.Value
	}
	return ""
}
