package anchor_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/anchor"
	"github.com/bowline-iot/bowline/engine/enginetest"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/provision"
	"github.com/bowline-iot/bowline/internal/resources"
)

// calls counts the DynamoDB calls of an anchor round, and the event-table
// items they read (rows returned by queries and gets, items a scan of the
// table itself, not of an index, read).
type calls struct {
	*dynamodb.Client
	events string

	mu        sync.Mutex
	n         int
	eventRows int
	tableScan int
}

func (c *calls) count(rows int) {
	c.mu.Lock()
	c.n++
	c.eventRows += rows
	c.mu.Unlock()
}

func (c *calls) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := c.Client.Query(ctx, in, o...)
	rows := 0
	if err == nil && aws.ToString(in.TableName) == c.events {
		rows = len(out.Items)
	}
	c.count(rows)
	return out, err
}

func (c *calls) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.count(0)
	return c.Client.GetItem(ctx, in, o...)
}

func (c *calls) Scan(ctx context.Context, in *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	out, err := c.Client.Scan(ctx, in, o...)
	c.count(0)
	if err == nil && in.IndexName == nil && aws.ToString(in.TableName) == c.events {
		c.mu.Lock()
		c.tableScan += int(out.ScannedCount)
		c.mu.Unlock()
	}
	return out, err
}

func (c *calls) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	c.count(0)
	return c.Client.BatchGetItem(ctx, in, o...)
}

func (c *calls) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.count(0)
	return c.Client.PutItem(ctx, in, o...)
}

func (c *calls) take() (n, eventRows, tableScan int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, eventRows, tableScan = c.n, c.eventRows, c.tableScan
	c.n, c.eventRows, c.tableScan = 0, 0, 0
	return
}

// TestRoundReadsOnlyWhatChanged: N tenants with M events each, K of them
// grown since the last round. A round costs a few calls per 100 tenants
// plus the changed tenants' work: it reads no event row of an unchanged
// tenant and never scans the events table, so its cost does not grow with
// M (docs/chain.md, "Anchors").
func TestRoundReadsOnlyWhatChanged(t *testing.T) {
	f := newFixture(t)
	// Tables of its own: the shared ones hold the other tests' tenants,
	// some broken on purpose.
	names, err := resources.New("r" + strings.ToLower(ulid.Make().String()[20:]))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provision.Provision(f.ctx, lstest.AWSConfig(t), names, provision.Options{Parts: []provision.Part{provision.Tables}}); err != nil {
		t.Fatal(err)
	}
	f.names = names
	const (
		n = 120 // two batches of heads and of anchors
		m = 6
		k = 3
	)
	var tenants []string
	var last []engine.Envelope
	for range n {
		tn := newTenant()
		var envs []engine.Envelope
		for i := 1; i <= m; i++ {
			envs = append(envs, enginetest.Envelope(t, tn, "t.happened", uint64(i), nil))
		}
		envs = f.write(engine.Genesis, envs)
		tenants = append(tenants, tn)
		last = append(last, envs[len(envs)-1])
	}
	c := &calls{Client: f.ddb, events: f.names.EventsTable()}
	var l *anchor.Ledger
	l, err = anchor.New(anchor.Config{Client: c, Table: f.names.AnchorsTable(), Chains: engine.NewVerifier(c, f.names.EventsTable(), 100),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	round := func() anchor.RoundReport {
		t.Helper()
		rep, err := l.Round(f.ctx)
		if err != nil || len(rep.Failed) > 0 || len(rep.Broken) > 0 {
			t.Fatalf("Round = %+v, %v; want no failure", rep, err)
		}
		return rep
	}
	if rep := round(); rep.Anchored != n {
		t.Fatalf("first round anchored %d; want %d", rep.Anchored, n)
	}
	first, firstRows, _ := c.take()

	rep := round()
	calls, rows, scanned := c.take()
	t.Logf("N=%d tenants, M=%d events each: first round %d calls (%d event rows); unchanged round %d calls, %d event rows", n, m, first, firstRows, calls, rows)
	// Index scan 1, registry query 1, heads 2 batches, anchors 2 batches.
	if rep.Unchanged != n || calls > 6 || rows != 0 || scanned != 0 {
		t.Errorf("unchanged round: %d unchanged, %d calls, %d event rows, %d table items scanned; want %d, at most 6, 0, 0", rep.Unchanged, calls, rows, scanned, n)
	}

	for i := range k {
		next := enginetest.Envelope(t, tenants[i], "t.happened", m+1, nil)
		f.write(last[i].Hash, []engine.Envelope{next})
	}
	rep = round()
	calls, rows, scanned = c.take()
	t.Logf("K=%d changed: %d calls, %d event rows", k, calls, rows)
	// Per changed tenant: latest anchor, the anchored row and the new one
	// (one query), the head, the put.
	if rep.Anchored != k || rep.Unchanged != n-k || calls > 6+k*5 || rows > 2*k || scanned != 0 {
		t.Errorf("round after %d grew: anchored %d, unchanged %d, %d calls, %d event rows, %d scanned; want %d, %d, at most %d, at most %d, 0",
			k, rep.Anchored, rep.Unchanged, calls, rows, scanned, k, n-k, 6+k*5, 2*k)
	}
}
