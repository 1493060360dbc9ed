package app_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/engine/relay"
	"github.com/bowline-iot/bowline/internal/awscalls"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
)

// TestPartsRecordUnderTheirLabels: with a recorder, each part the App hands
// out records its AWS calls under its own label; a queue URL another part
// resolved is recorded as cached for the asking part; the relay's pipe
// calls are apart from the stand-in's own; without a recorder, Part is the
// App itself.
func TestPartsRecordUnderTheirLabels(t *testing.T) {
	names := lstest.Names(t)
	plain, err := app.Open(app.Config{AWS: lstest.AWSConfig(t), Names: names})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if plain.Part(app.PartWorker) != plain {
		t.Errorf("Part without a recorder is a view; want the App itself")
	}

	path := filepath.Join(t.TempDir(), "calls.jsonl")
	rec, err := awscalls.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Open(app.Config{AWS: lstest.AWSConfig(t), Names: names, Calls: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Part(app.PartWorker) != a.Part(app.PartWorker) || a.Part(app.PartEngine) != a {
		t.Errorf("Part hands out a new view each time, or another for the App's own part")
	}
	ctx := t.Context()
	bound, err := bindForTest(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Worker(ctx, bound, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Redriver(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Relay(ctx, relay.EventsPipe, nil); err != nil {
		t.Fatal(err)
	}
	calls, err := awscalls.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		part, action, queue string
		cached              bool
	}
	got := map[key]bool{}
	for _, c := range calls {
		if c.Stack != names.Stack {
			t.Errorf("call %+v on stack %q; want %q", c, c.Stack, names.Stack)
		}
		got[key{c.Part, c.Action, c.Resource[strings.LastIndex(c.Resource, ":")+1:], c.Cached}] = true
	}
	events, dlq := names.EventsQueue(), names.EventsDLQ()
	for _, want := range []key{
		{app.PartWorker, "sqs:GetQueueUrl", events, false},
		{app.PartWorker, "sqs:GetQueueUrl", dlq, false},
		{app.PartWorker, "sqs:GetQueueAttributes", events, false},
		{app.PartRedrive, "sqs:GetQueueUrl", dlq, true},
		{app.PartRelay, "sqs:GetQueueUrl", events, true},
	} {
		if !got[want] {
			t.Errorf("no recorded %+v among %v", want, got)
		}
	}
}
