package anchor_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/anchor"
	"github.com/bowline-iot/bowline/engine/attr"
	"github.com/bowline-iot/bowline/engine/enginetest"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/resources"
)

func TestMain(m *testing.M) { lstest.Main(m, localstack.DynamoDB) }

type fixture struct {
	t      *testing.T
	ctx    context.Context
	ddb    *dynamodb.Client
	names  resources.Names
	ledger *anchor.Ledger
	chains *engine.Verifier
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	names := lstest.Names(t)
	ddb := dynamodb.NewFromConfig(lstest.AWSConfig(t), awsenv.DynamoDBOptions)
	chains := engine.NewVerifier(ddb, names.EventsTable(), 3) // small pages: verification crosses pages
	l, err := anchor.New(anchor.Config{Client: ddb, Table: names.AnchorsTable(), Chains: chains,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, ctx: enginetest.Ctx(t), ddb: ddb, names: names, ledger: l, chains: chains}
}

func newTenant() string { return "t-" + strings.ToLower(ulid.Make().String()) }

// write seals envs in order after prev and writes their rows and the head
// with plain PutItem calls: what Emit commits, or what a writer holding a
// task role's rights could write behind its back.
func (f *fixture) write(prev string, envs []engine.Envelope) []engine.Envelope {
	f.t.Helper()
	for i := range envs {
		if err := engine.Seal(&envs[i], prev); err != nil {
			f.t.Fatal(err)
		}
		if err := enginetest.PutEventRow(f.ctx, f.ddb, f.names.EventsTable(), envs[i]); err != nil {
			f.t.Fatal(err)
		}
		prev = envs[i].Hash
	}
	return envs
}

// appendAnchored appends n events to tenant's chain, running an anchor
// round for the tenant after each, and returns the whole chain.
func (f *fixture) appendAnchored(tenant string, n int) []engine.Envelope {
	f.t.Helper()
	var chain []engine.Envelope
	for i := 1; i <= n; i++ {
		prev := engine.Genesis
		if len(chain) > 0 {
			prev = chain[len(chain)-1].Hash
		}
		chain = append(chain, f.write(prev, []engine.Envelope{enginetest.Envelope(f.t, tenant, "t.happened", uint64(i), nil)})...)
		res, err := f.ledger.AnchorTenant(f.ctx, tenant)
		if err != nil || !res.Anchored || res.Point.Seq != uint64(i) {
			f.t.Fatalf("AnchorTenant after seq %d = %+v, %v; want a new anchor at seq %d", i, res, err, i)
		}
	}
	return chain
}

func (f *fixture) del(key map[string]types.AttributeValue) {
	f.t.Helper()
	if _, err := f.ddb.DeleteItem(f.ctx, &dynamodb.DeleteItemInput{TableName: aws.String(f.names.EventsTable()), Key: key}); err != nil {
		f.t.Fatal(err)
	}
}

func headKey(tenant string) map[string]types.AttributeValue {
	return attr.Key(engine.HeadPK(tenant), engine.HeadSK)
}

func eventKey(tenant string, seq uint64) map[string]types.AttributeValue {
	return attr.Key(engine.EventPK(tenant), engine.SeqSK(seq))
}

func wantBroken(t *testing.T, rep engine.ChainReport, tenant string, seq uint64, reason engine.Reason) {
	t.Helper()
	if rep.Intact || rep.Tenant != tenant || rep.FirstBadSeq != seq || rep.Reason != reason {
		t.Errorf("Verify = tenant %q intact %v, first bad seq %d, reason %q (%s); want tenant %q broken at seq %d, %q",
			rep.Tenant, rep.Intact, rep.FirstBadSeq, rep.Reason, rep.Detail, tenant, seq, reason)
	}
}

// TestVerifyFindsRewriteAndReseal anchors a chain, then rewrites one event
// and reseals everything after it (every later hash and the head
// recomputed) with raw DynamoDB writes. The chain alone checks out; the
// anchors catch it and name the tenant and the rewritten seq.
func TestVerifyFindsRewriteAndReseal(t *testing.T) {
	f := newFixture(t)
	tenant := newTenant()
	chain := f.appendAnchored(tenant, 8)
	if rep, err := f.ledger.Verify(f.ctx, tenant); err != nil || !rep.Intact || rep.Anchors != 8 || rep.AnchoredSeq != 8 {
		t.Fatalf("Verify before tampering = %+v, %v; want intact against 8 anchors", rep, err)
	}

	forged := slices.Clone(chain[4:]) // seq 5..8
	forged[0].Payload = map[string]any{"n": float64(500)}
	f.write(chain[3].Hash, forged)

	if rep, err := f.chains.VerifyChain(f.ctx, tenant); err != nil || !rep.Intact {
		t.Fatalf("VerifyChain after reseal = %+v, %v; want intact (the chain alone cannot tell)", rep, err)
	}
	rep, err := f.ledger.Verify(f.ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	wantBroken(t, rep, tenant, 5, engine.ReasonAnchorMismatch)
	if !strings.Contains(rep.Detail, "after seq 4") {
		t.Errorf("Verify detail = %q; want it to say the rewrite is after seq 4", rep.Detail)
	}

	// The anchor job refuses to anchor the forged chain.
	res, err := f.ledger.AnchorTenant(f.ctx, tenant)
	if err != nil || res.Anchored || res.Report.Intact || res.Report.FirstBadSeq != 8 {
		t.Errorf("AnchorTenant after reseal = %+v, %v; want no anchor, chain broken at the anchored seq 8", res, err)
	}
}

// TestVerifyFindsTruncation deletes the newest rows and rewrites the head
// to match: the chain alone checks out, the newest anchor does not.
func TestVerifyFindsTruncation(t *testing.T) {
	f := newFixture(t)
	tenant := newTenant()
	chain := f.appendAnchored(tenant, 5)
	f.del(eventKey(tenant, 5))
	f.del(eventKey(tenant, 4))
	f.write(chain[1].Hash, []engine.Envelope{chain[2]}) // re-put seq 3 and a head at 3
	if rep, err := f.chains.VerifyChain(f.ctx, tenant); err != nil || !rep.Intact {
		t.Fatalf("VerifyChain after truncation = %+v, %v; want intact (the chain alone cannot tell)", rep, err)
	}
	rep, err := f.ledger.Verify(f.ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	wantBroken(t, rep, tenant, 4, engine.ReasonAnchorAhead)
}

// TestTenantsWithoutHeads deletes head rows and checks that every tenant
// is still found and reported: through its event rows, or through the
// registry when its rows are gone too.
func TestTenantsWithoutHeads(t *testing.T) {
	f := newFixture(t)
	anchored, unanchored, emptied := newTenant(), newTenant(), newTenant()
	f.appendAnchored(anchored, 2)
	f.write(engine.Genesis, []engine.Envelope{enginetest.Envelope(t, unanchored, "t.happened", 1, nil)})
	f.appendAnchored(emptied, 1)
	for _, tn := range []string{anchored, unanchored, emptied} {
		f.del(headKey(tn))
	}
	f.del(eventKey(emptied, 1))

	tenants, err := f.ledger.Tenants(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tn := range []string{anchored, unanchored, emptied} {
		if !slices.Contains(tenants, tn) {
			t.Errorf("Tenants() lacks %q; want every tenant with rows or anchors", tn)
		}
	}
	for tn, want := range map[string]struct {
		seq    uint64
		reason engine.Reason
	}{
		anchored:   {1, engine.ReasonMissingHead},
		unanchored: {1, engine.ReasonMissingHead},
		emptied:    {1, engine.ReasonAnchorAhead},
	} {
		rep, err := f.ledger.Verify(f.ctx, tn)
		if err != nil {
			t.Fatal(err)
		}
		wantBroken(t, rep, tn, want.seq, want.reason)
	}
	// The engine's own discovery finds a headless tenant by its event rows.
	found, err := f.chains.Tenants(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(found, unanchored) {
		t.Errorf("Verifier.Tenants() lacks %q, whose head was deleted; want it found by its event rows", unanchored)
	}
}

// TestAnchorsAreKept checks that a round without new events writes
// nothing, that each anchor links to the one before it, and that an
// anchor is never replaced.
func TestAnchorsAreKept(t *testing.T) {
	f := newFixture(t)
	tenant := newTenant()
	chain := f.appendAnchored(tenant, 2)
	res, err := f.ledger.AnchorTenant(f.ctx, tenant)
	if err != nil || res.Anchored || res.Point.Seq != 2 || !res.Report.Intact {
		t.Fatalf("AnchorTenant without new events = %+v, %v; want intact, nothing new, anchored at seq 2", res, err)
	}
	hist, err := f.ledger.History(f.ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 2 || hist[0].Point != (engine.ChainPoint{Seq: 1, Hash: chain[0].Hash}) || hist[1].PrevSeq != 1 || hist[1].Point.Hash != chain[1].Hash {
		t.Fatalf("History = %+v; want anchors at seq 1 and 2, the second after the first", hist)
	}
	rep, err := f.ledger.Round(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, failed := rep.Failed[tenant]; failed || rep.Tenants == 0 {
		t.Errorf("Round = %+v; want every tenant handled", rep)
	}
}

func TestNewRejectsMissingFields(t *testing.T) {
	if _, err := anchor.New(anchor.Config{}); !errors.Is(err, anchor.ErrConfig) {
		t.Errorf("New(Config{}) = %v; want ErrConfig", err)
	}
}

// racer is an anchors-table client that, just before each anchor put,
// lets another anchor job write the same row first with hash.
type racer struct {
	*dynamodb.Client
	hash string
}

func (r *racer) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if strings.HasPrefix(attr.GetS(in.Item, attr.PK), "ANCHOR#") {
		first := maps.Clone(in.Item)
		first["hash"] = attr.S(r.hash)
		if _, err := r.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: in.TableName, Item: first}); err != nil {
			return nil, err
		}
	}
	return r.Client.PutItem(ctx, in, opts...)
}

// TestConcurrentAnchorJobs: an anchor row another job wrote first is fine
// when it names the same hash, and ErrAnchorConflict when it does not.
func TestConcurrentAnchorJobs(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name    string
		hash    func(engine.Envelope) string
		wantErr error
	}{
		{"same hash", func(e engine.Envelope) string { return e.Hash }, nil},
		{"other hash", func(engine.Envelope) string { return strings.Repeat("f", 64) }, anchor.ErrAnchorConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tenant := newTenant()
			env := f.write(engine.Genesis, []engine.Envelope{enginetest.Envelope(t, tenant, "t.happened", 1, nil)})[0]
			l, err := anchor.New(anchor.Config{Client: &racer{Client: f.ddb, hash: tc.hash(env)}, Table: f.names.AnchorsTable(),
				Chains: f.chains, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.AnchorTenant(f.ctx, tenant); !errors.Is(err, tc.wantErr) {
				t.Errorf("AnchorTenant with a racing job = %v; want %v", err, tc.wantErr)
			}
		})
	}
}
