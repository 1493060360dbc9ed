package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/enginetest"
	"github.com/bowline-iot/bowline/engine/inbox"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/resources"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// relayAndWorkerDeliver: `bowline relay` and `bowline worker`
// as processes carry an event row written to the events table to every
// DURABLE subscription the catalog matches for it, each completed once in
// the inbox; `bowline dead-letters --json` then reports none for the
// tenant.
func relayAndWorkerDeliver(t *testing.T, bin string) {
	ctx := enginetest.Ctx(t)
	cfg := lstest.AWSConfig(t)
	names := lstest.Names(t)
	ddb := dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions)
	in, _ := inbox.New(inbox.Config{Client: ddb, Table: names.InboxTable()})
	env := append(os.Environ(), resources.StackEnv+"="+names.Stack)
	start := func(args ...string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		child := testkit.StartChild(t, "bowline "+args[0], cmd)
		t.Cleanup(func() {
			_ = child.Stop(syscall.SIGTERM, 20*time.Second)
			if t.Failed() {
				t.Logf("bowline %s output:\n%s", strings.Join(args, " "), out.String())
			}
		})
	}
	start("relay", "--poll", "50ms")                 // both pipes, as deployed
	start("worker", "--wait", "1s", "--lease", "5s") // durable and best-effort lanes

	tenant := "e2e" + strings.ToLower(ulid.Make().String()[18:])
	ev := enginetest.Envelope(t, tenant, "bowl.meal_finished", 1, map[string]any{"grams_eaten": 42.0, "duration_s": 60.0, "started_at": time.Now().UTC().Format(time.RFC3339Nano), "pet_tag": "tag-1"})
	if err := enginetest.PutEventRow(ctx, ddb, names.EventsTable(), ev); err != nil {
		t.Fatal(err)
	}
	subs := engine.Match(catalog.Bowline().Subscriptions, engine.Durable, ev.Type)
	if len(subs) == 0 {
		t.Fatalf("catalog has no DURABLE subscription for %s", ev.Type)
	}
	deadline := time.Now().Add(90 * time.Second)
	for _, s := range subs {
		for {
			r, _, err := in.Get(ctx, ev.ID, s.Name)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status == inbox.Completed {
				if r.Attempts != 1 {
					t.Errorf("%s attempts = %d; want 1", s.Name, r.Attempts)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("gave up waiting for %s to complete event %s (row %+v)", s.Name, ev.ID, r)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	cmd := exec.Command(bin, "dead-letters", "--json", "--tenant", tenant)
	cmd.Env = env
	out, err := testkit.ChildOutput(ctx, t, "bowline dead-letters", cmd)
	if err != nil {
		t.Fatalf("bowline dead-letters: %v", err)
	}
	var got struct {
		Count int `json:"count"`
	}
	if err := json.Unmarshal(out, &got); err != nil || got.Count != 0 {
		t.Errorf("bowline dead-letters --json = %s (%v); want count 0", out, err)
	}
}
