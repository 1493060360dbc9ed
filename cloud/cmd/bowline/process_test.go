package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/dev"
	"github.com/bowline-iot/bowline/cloud/fakes"
	"github.com/bowline-iot/bowline/cloud/subscribers"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/resources"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// proc is one bowline command running as an OS process.
type proc struct {
	name  string
	child *testkit.Child
	lines chan string // stdout and stderr lines
}

func startProc(t *testing.T, bin string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{name: args[0], lines: make(chan string, 4096)}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	logged := make(chan struct{})
	t.Cleanup(func() { <-logged }) // after the child's cleanup: no t.Logf once the test is over
	p.child = testkit.StartChildLines(t, "bowline "+args[0], cmd)
	go func() {
		defer close(logged)
		for l := range p.child.Lines() {
			t.Logf("%s: %s", p.name, l)
			select {
			case p.lines <- l:
			default:
			}
		}
	}()
	return p
}

// waitLine returns the first line containing substr.
func (p *proc) waitLine(t *testing.T, substr string) string {
	t.Helper()
	hang := time.After(90 * time.Second)
	for {
		select {
		case l := <-p.lines:
			if strings.Contains(l, substr) {
				return l
			}
		case <-p.child.Exited():
			t.Fatalf("bowline %s exited (%v) before saying %q", p.name, p.child.Err(), substr)
		case <-hang:
			t.Fatalf("bowline %s never said %q", p.name, substr)
		}
	}
}

// stop sends SIGTERM and checks the process exits 0.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	err := p.child.Stop(syscall.SIGTERM, 60*time.Second)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("bowline %s did not exit after SIGTERM", p.name)
	} else if err != nil {
		t.Errorf("bowline %s after SIGTERM: %v; want exit 0", p.name, err)
	}
}

// commandsAsProcesses runs `bowline api`, `bowline relay` and `bowline
// worker` as processes configured only by the environment: the worker's
// registry must carry the cloud subscribers (a paid order reaches each fake
// provider once), and a contact change must travel the BEST_EFFORT lane
// (app stream -> record-changes -> contact_changes) into the worker's
// owner directory.
func commandsAsProcesses(t *testing.T, bin string) {
	lstest.Stack(t)
	ctx := context.Background()
	names := freshStack(t)
	fk, err := fakes.Serve(ctx, fakes.NewSet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fk.Close() })
	token, tenant, secret := "tok-"+randHex(8), "proc-"+randHex(4), "whsec-"+randHex(8)
	env := append(os.Environ(), fk.Env()...)
	env = append(env, resources.StackEnv+"="+names.Stack, api.TokensEnv+"="+token+"="+tenant, api.WebhookSecretEnv+"="+secret)

	apiProc := startProc(t, bin, env, "api", "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0")
	line := apiProc.waitLine(t, "listening on ")
	url := strings.Fields(line[strings.Index(line, "listening on ")+len("listening on "):])[0]
	relayProc := startProc(t, bin, env, "relay", "--poll", "50ms")
	workerProc := startProc(t, bin, env, "worker", "--wait", "2s")

	c := &dev.Client{URL: url, Token: token, Secret: secret}
	id, err := c.Order(ctx, "cust-p", "pet-p", 4999)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := c.Pay(ctx, id, "pay_"+randHex(5), 4999)
	if err != nil {
		t.Fatal(err)
	}
	providers := map[*fakes.Fake]string{fk.Set.Shopify: "shopify_mirror", fk.Set.Shipping: "book_shipment", fk.Set.Notify: "notify_buyer"}
	testkit.WaitFor(t, "every provider to see "+ev, 90*time.Second, func() bool {
		for f, sub := range providers {
			if _, ok := f.CallsWith(ev + ":" + sub); ok != 1 {
				return false
			}
		}
		return true
	})

	// The BEST_EFFORT lane: the first food_low caches the owner's email;
	// the row changes to sms; once the worker has consumed the change, the
	// next food_low goes by sms although the cache entry has not expired.
	cfg := lstest.AWSConfig(t)
	db := dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions)
	eng, err := engine.New(engine.Config{Client: db, EventsTable: names.EventsTable(), InboxTable: names.InboxTable(), Catalog: catalog.Bowline()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	putContact := func(channel, address string) {
		t.Helper()
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(names.AppTable()), Item: map[string]types.AttributeValue{
			"pk": sv(subscribers.ContactPK(tenant)), "sk": sv(subscribers.ContactSK), "entity": sv("contact"),
			"tenant": sv(tenant), "channel": sv(channel), "address": sv(address),
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	foodLow := func() string {
		t.Helper()
		env, err := eng.Emit(engine.WithTenant(ctx, tenant), "bowl.food_low", map[string]any{"level_g": 40, "threshold_g": 50})
		if err != nil {
			t.Fatal(err)
		}
		key := env.ID + ":notify_owner"
		testkit.WaitFor(t, "the owner notification "+key, 90*time.Second, func() bool { _, ok := fk.Set.Notify.CallsWith(key); return ok == 1 })
		for _, call := range fk.Set.Notify.Calls() {
			if call.IdempotencyKey == key {
				var n struct {
					Channel string `json:"channel"`
					To      string `json:"to"`
				}
				_ = json.Unmarshal(call.Body, &n)
				return n.Channel + " " + n.To
			}
		}
		return ""
	}
	putContact("email", "owner@example.org") // an insert: read on the cache miss
	if got := foodLow(); got != "email owner@example.org" {
		t.Errorf("first food_low went to %q; want email owner@example.org", got)
	}
	putContact("sms", "+15550100")
	workerProc.waitLine(t, "owner contact refreshed")
	if got := foodLow(); got != "sms +15550100" {
		t.Errorf("food_low after the contact change went to %q; want sms +15550100", got)
	}

	for _, p := range []*proc{apiProc, relayProc, workerProc} {
		p.stop(t)
	}
	if r := fk.Set.Shopify.CountByKey()[ev+":shopify_mirror"]; r != 1 {
		t.Errorf("shopify calls for %s after shutdown = %d; want 1", ev, r)
	}
	if resp, err := http.Get(url + "/healthz"); err == nil {
		resp.Body.Close()
		t.Errorf("the api still answers after SIGTERM")
	}
}

func sv(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
