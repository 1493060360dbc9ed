package ingest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/eventsource"
	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/cloud/rules"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/resources"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// The test binary re-executed with deployChildEnv set is one events
// consumer process: what `bowline ingest` runs locally (the ingester behind
// the event source stand-in), on the stream deployStreamEnv names.
const (
	deployChildEnv  = "BOWLINE_INGEST_DEPLOY_CHILD"
	deployStreamEnv = "BOWLINE_INGEST_DEPLOY_STREAM"
	deployReadyLine = "consumer ready"
)

// deployChild runs one consumer until SIGTERM (or the test's SIGKILL).
func deployChild() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "deploy child: %v\n", err)
		return 1
	}
	awsCfg, err := awsenv.Load(ctx)
	if err != nil {
		return fail(err)
	}
	names, err := resources.FromEnv()
	if err != nil {
		return fail(err)
	}
	a, err := app.Open(app.Config{AWS: awsCfg, Names: names, Part: app.PartIngest})
	if err != nil {
		return fail(err)
	}
	defer a.Close()
	in, err := a.Ingest(ingest.Config{GapGrace: 5 * time.Second, GapFlushInterval: time.Second})
	if err != nil {
		return fail(err)
	}
	r, err := a.EventsSource(ctx, app.IngestHandler(in), func(c *eventsource.Config) {
		c.Stream = os.Getenv(deployStreamEnv)
		c.PollInterval = 200 * time.Millisecond
		c.ShardRefresh = time.Second
	})
	if err != nil {
		return fail(err)
	}
	go in.Run(ctx)
	fmt.Println(deployReadyLine)
	if err := r.Run(ctx); err != nil && ctx.Err() == nil {
		return fail(err)
	}
	return 0
}

// consumerProc is one consumer child process.
type consumerProc struct {
	child  *testkit.Child
	stderr *bytes.Buffer
	mu     *sync.Mutex
}

// startConsumer starts a consumer child on stream and waits until it runs.
func startConsumer(t *testing.T, stream string) *consumerProc {
	t.Helper()
	cmd := testkit.TestBinary("-test.run=^$")
	cmd.Env = append(os.Environ(), lstest.Stack(t).Env()...)
	cmd.Env = append(cmd.Env, "BOWLINE_STACK="+lstest.Names(t).Stack, deployChildEnv+"=1", deployStreamEnv+"="+stream)
	p := &consumerProc{stderr: &bytes.Buffer{}, mu: &sync.Mutex{}}
	cmd.Stderr = lockedWriter{p.mu, p.stderr}
	p.child = testkit.StartChildLines(t, "consumer", cmd)
	hang := time.After(hangGuard)
	for {
		select {
		case l, ok := <-p.child.Lines():
			if !ok {
				p.wait()
				t.Fatalf("consumer exited before it ran; stderr:\n%s", p.log())
			}
			if l == deployReadyLine {
				return p
			}
		case <-hang:
			t.Fatalf("consumer never ran; stderr:\n%s", p.log())
		}
	}
}

func (p *consumerProc) signal(s syscall.Signal) { _ = p.child.Signal(s) }
func (p *consumerProc) wait()                   { <-p.child.Exited() }
func (p *consumerProc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// TestDeployReplacingEveryConsumerLosesNothing is the deploy the way ECS
// does it, all tasks at once: two consumer processes (this test binary
// re-executed as `bowline ingest` runs: the ingester behind the event
// source stand-in) read a two-shard events stream while gateways publish
// continuously, as the events rule puts them (a record in the stream is
// what the gateway's PUBACK stands for). Both consumers get SIGTERM at the
// same moment; events go on being published while none runs; two new ones
// start; later both get SIGKILL at once, and two more start. Then every
// event published is in its tenant's chain exactly once, the chains are
// intact, nothing was dead-lettered and no bowl.data_gap was raised. It
// waits on progress only (events published, the chains caught up), never
// on time.
func TestDeployReplacingEveryConsumerLosesNothing(t *testing.T) {
	testkit.Long(t, "deploy test: starts and kills consumer processes")
	e := newEnv(t)
	cfg := lstest.AWSConfig(t)
	kin := kinesis.NewFromConfig(cfg)
	stream := uniq(lstest.Names(t).Stack + "-deploy")
	if _, err := kin.CreateStream(t.Context(), &kinesis.CreateStreamInput{StreamName: aws.String(stream), ShardCount: aws.Int32(2)}); err != nil {
		t.Fatalf("create stream %s: %v", stream, err)
	}
	waitStream(t, kin, stream)

	type bowl struct{ tenant, thing string }
	var bowls []bowl
	for i := range 3 {
		tenant := uniq(fmt.Sprintf("t%d", i))
		gw := uniq("gw")
		for _, thing := range []string{gw, gw + ":a"} {
			e.register(t, thing, tenant)
			bowls = append(bowls, bowl{tenant, thing})
		}
	}

	// The gateways: each bowl publishes its events in seq order; a put
	// that fails is retried with the same event, as a gateway resends
	// what was not PUBACKed.
	var published atomic.Int64
	sent := make([]uint64, len(bowls)) // last seq put, per bowl
	stop := make(chan struct{})
	var gateways sync.WaitGroup
	for i, b := range bowls {
		gateways.Add(1)
		go func() {
			defer gateways.Done()
			for seq := uint64(1); ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				body, _ := json.Marshal(event(b.thing, seq, fmt.Sprintf("e%d", seq), catalog.TypeMealFinished, meal(10)))
				rec, key, err := rules.Events.Evaluate(topic(b.tenant, b.thing, "events"), body, time.Now())
				if err != nil {
					t.Errorf("events rule: %v", err)
					return
				}
				for {
					_, err := kin.PutRecord(context.Background(), &kinesis.PutRecordInput{StreamName: aws.String(stream), PartitionKey: aws.String(key), Data: rec})
					if err == nil {
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				sent[i] = seq
				published.Add(1)
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	progress := func(what string, n int64) {
		t.Helper()
		want := published.Load() + n
		deadline := time.Now().Add(hangGuard)
		for published.Load() < want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d events published; want %d", what, published.Load(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	chained := func() int {
		n := 0
		for _, tenant := range []string{bowls[0].tenant, bowls[2].tenant, bowls[4].tenant} {
			n += len(e.events(t, tenant))
		}
		return n
	}
	emitted := func(what string, n int) {
		t.Helper()
		want := chained() + n
		deadline := time.Now().Add(hangGuard)
		for chained() < want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the chains never grew by %d", what, n)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	procs := []*consumerProc{startConsumer(t, stream), startConsumer(t, stream)}
	emitted("first consumers", 30)
	for round, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		for _, p := range procs { // every task at once
			p.signal(sig)
		}
		for _, p := range procs {
			p.wait()
		}
		progress(fmt.Sprintf("round %d: publishing with no consumer", round), 30)
		procs = []*consumerProc{startConsumer(t, stream), startConsumer(t, stream)}
		emitted(fmt.Sprintf("round %d: new consumers", round), 30)
	}
	close(stop)
	gateways.Wait()

	// Every event published reaches its chain exactly once.
	total := int(published.Load())
	deadline := time.Now().Add(hangGuard)
	for chained() < total && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	verifier := engine.NewVerifier(e.ddb, lstest.Names(t).EventsTable(), 0)
	seen := map[string]int{}
	for _, tenant := range []string{bowls[0].tenant, bowls[2].tenant, bowls[4].tenant} {
		for _, env := range e.events(t, tenant) {
			if env.Type != catalog.TypeMealFinished {
				t.Errorf("tenant %s: event %s of type %s in the chain; want only the published meals (no bowl.data_gap)", tenant, env.ID, env.Type)
				continue
			}
			thing, _ := env.Payload["thing"].(string)
			id, _ := env.Payload["device_event_id"].(string)
			seen[thing+"/"+id]++
		}
		rep, err := verifier.VerifyChain(t.Context(), tenant)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Intact {
			t.Errorf("tenant %s chain broken at %d: %s", tenant, rep.FirstBadSeq, rep.Reason)
		}
		letters, err := e.ddb.Query(t.Context(), &dynamodb.QueryInput{
			TableName:                 aws.String(lstest.Names(t).DeadLettersTable()),
			KeyConditionExpression:    aws.String("pk = :pk"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": &ddbtypes.AttributeValueMemberS{Value: "TENANT#" + tenant}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(letters.Items) != 0 {
			t.Errorf("tenant %s: %d dead letters; want 0", tenant, len(letters.Items))
		}
	}
	missing := 0
	for i, b := range bowls {
		for seq := uint64(1); seq <= sent[i]; seq++ {
			switch n := seen[fmt.Sprintf("%s/e%d", b.thing, seq)]; n {
			case 1:
			case 0:
				missing++
			default:
				t.Errorf("%s event e%d in the chain %d times; want once", b.thing, seq, n)
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d published events missing from the chains", missing, total)
	}
	if len(seen) != total {
		t.Errorf("%d distinct events in the chains; want the %d published", len(seen), total)
	}
	t.Logf("%d events published across 2 replacements of every consumer (SIGTERM, then SIGKILL)", total)
}

func waitStream(t *testing.T, kin *kinesis.Client, name string) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		out, err := kin.DescribeStreamSummary(t.Context(), &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(name)})
		if err == nil && out.StreamDescriptionSummary.StreamStatus == "ACTIVE" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream %s never active: %v", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
