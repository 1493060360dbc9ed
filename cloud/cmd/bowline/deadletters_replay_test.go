package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/cloud/devices"
	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/deploy/cfn/iamtest"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/cli"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/resources"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// Bad replay arguments are usage errors that say what is wrong, before
// any AWS call.
func TestDeadLettersReplayUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--all"}, "--source ingest"},
		{[]string{"--source", "worker", "--all"}, "bowline redrive"},
		{[]string{"--source", "ingest"}, "--all or --id"},
		{[]string{"--source", "ingest", "--all", "--id", "t/x/ingest"}, "--all or --id"},
		{[]string{"--source", "ingest", "--all", "extra"}, "unexpected argument"},
	} {
		err := deadLettersReplayCmd(context.Background(), c.args, &bytes.Buffer{})
		if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("dead-letters replay %q = %v; want a usage error naming %q", c.args, err, c.want)
		}
	}
	if err := deadLettersCmd(context.Background(), []string{"--source", "mqtt"}, &bytes.Buffer{}); !errors.Is(err, cli.ErrUsage) {
		t.Errorf("dead-letters --source mqtt = %v; want a usage error", err)
	}
}

// End to end on the local stack, with bowline as a process: an ingest
// letter of a message from a thing registered only afterwards is listed
// with its key, replayed (emitted), and replayed again by key (duplicate:
// the event is in the log once).
func TestDeadLettersReplayIngestCommand(t *testing.T) {
	testkit.Long(t, "runs bowline as a process")
	iamtest.Record(t) // the listing and the replay's calls are checked against OperatorRole
	ctx := t.Context()
	names := freshStack(t)
	ddb := dynamodb.NewFromConfig(lstest.AWSConfig(t), awsenv.DynamoDBOptions)
	tenant, thing := "t"+randHex(4), "bowl-"+randHex(4)
	reg, err := devices.New(ddb, names.AppTable(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(ctx, thing, tenant); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(map[string]any{"v": 1, "thing": thing, "seq": 1, "id": "meal-1", "type": "bowl.meal_finished",
		"at": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano), "data": map[string]any{"grams_eaten": 42.5, "duration_s": 95, "started_at": time.Now().Add(-3 * time.Minute).UTC().Format(time.RFC3339Nano), "pet_tag": "tag-1"}})
	if err != nil {
		t.Fatal(err)
	}
	dl, err := deadletter.New(ddb, names.DeadLettersTable(), nil)
	if err != nil {
		t.Fatal(err)
	}
	topic := "dt/bowline/" + tenant + "/" + thing + "/events"
	if err := dl.RecordPoison(ctx, deadletter.Letter{Error: "unknown_thing: not registered yet", Raw: raw, RawSize: len(raw),
		MessageID: topic + "#0123456789abcdef", Subscription: ingest.LetterSubscription}); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), resources.StackEnv+"="+names.Stack)
	bowline := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(bowlineBin(t), args...)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := testkit.ChildOutput(ctx, t, "bowline "+args[0], cmd)
		if err != nil {
			t.Fatalf("bowline %s: %v: %s %s", strings.Join(args, " "), err, out, stderr.String())
		}
		return out
	}
	var list struct {
		Letters []struct {
			Key string `json:"key"`
		} `json:"dead_letters"`
	}
	if err := json.Unmarshal(bowline("dead-letters", "--source", "ingest", "--json"), &list); err != nil || len(list.Letters) != 1 {
		t.Fatalf("dead-letters --source ingest = %+v, %v; want the one letter", list, err)
	}
	var replay struct {
		Replayed []replayResult `json:"replayed"`
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--all"}, "emitted"},
		{[]string{"--id", list.Letters[0].Key}, "duplicate"},
	} {
		out := bowline(append([]string{"dead-letters", "replay", "--source", "ingest", "--json"}, c.args...)...)
		if err := json.Unmarshal(out, &replay); err != nil || len(replay.Replayed) != 1 || replay.Replayed[0].Outcome != c.want {
			t.Fatalf("dead-letters replay %v = %s (%v); want one %s", c.args, out, err, c.want)
		}
	}
	n, err := ddb.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(names.EventsTable()), KeyConditionExpression: aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: engine.EventPK(tenant)}}})
	if err != nil || n.Count != 1 {
		t.Errorf("events of %s after two replays = %v (%v); want 1", tenant, n.Count, err)
	}
}
