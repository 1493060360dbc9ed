package redrive

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/enginetest"
	"github.com/bowline-iot/bowline/engine/inbox"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
)

// dlqSender puts dead events straight into a DLQ, as SQS's redrive does.
type dlqSender interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// deadEvents sends n events of tenant to dlq, in order, and returns them.
func deadEvents(t *testing.T, q dlqSender, dlq, tenant string, n int) []engine.Envelope {
	t.Helper()
	var out []engine.Envelope
	for i := range n {
		env := enginetest.Envelope(t, tenant, "com.payment_completed", uint64(i+1), nil)
		_, err := q.SendMessage(t.Context(), &sqs.SendMessageInput{
			QueueUrl: aws.String(dlq), MessageBody: aws.String(enginetest.Body(t, env)),
			MessageGroupId: aws.String(tenant), MessageDeduplicationId: aws.String(env.ID),
		})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, env)
	}
	return out
}

func ids(envs ...engine.Envelope) []string {
	var out []string
	for _, e := range envs {
		out = append(out, e.ID)
	}
	return out
}

// eventIDOf decodes a message body's event id.
func eventIDOf(t *testing.T, body string) string {
	t.Helper()
	env, err := engine.DecodeImageJSON([]byte(body))
	if err != nil {
		return "?" + body
	}
	return env.ID
}

// TestRedriveReachesAnEventBehindOthersOfItsTenant, on the local emulator
// (one message per group per receive): the event asked for is third in
// its tenant's group. Redrive moves it, with its dead row released; the
// two before it and the one after it stay in the DLQ in their order; the
// other tenant's group, which the dead letters do not point to, is not
// walked (its message keeps its id). A run for an id that is nowhere walks
// every group, reports the id, and leaves every group in order.
func TestRedriveReachesAnEventBehindOthersOfItsTenant(t *testing.T) {
	ctx := enginetest.Ctx(t)
	cfg := lstest.AWSConfig(t)
	ddb := dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions)
	names := lstest.Names(t)
	in, _ := inbox.New(inbox.Config{Client: ddb, Table: names.InboxTable()})
	dl, _ := deadletter.New(ddb, names.DeadLettersTable(), nil)
	sq := sqs.NewFromConfig(cfg)
	q := enginetest.FIFOQueues(t, "walk", 5*time.Second, maxReceive)

	mine, other := tenant(), tenant()
	envs := deadEvents(t, sq, q.DLQURL, mine, 4)
	otherEnv := deadEvents(t, sq, q.DLQURL, other, 1)[0]
	target := envs[2]
	claim, err := in.Claim(ctx, target.ID, "notify_buyer", "w1", time.Minute)
	must(t, err)
	must(t, in.MarkDead(ctx, claim, fmt.Errorf("template missing")))
	must(t, dl.Record(ctx, deadletter.Letter{Tenant: mine, EventID: target.ID, Subscription: "notify_buyer", Error: "template missing"}))
	otherMsgID := firstMessageID(ctx, t, sq, q.DLQURL, other)

	r, err := New(Config{Queue: sq, QueueURL: q.URL, DLQURL: q.DLQURL, Inbox: in, DeadLetters: dl, Hold: 30 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	must(t, err)
	res, err := r.Run(ctx, Options{EventIDs: []string{target.ID}})
	must(t, err)
	if len(res.Moved) != 1 || res.Moved[0].EventID != target.ID || !slices.Equal(res.Moved[0].Released, []string{"notify_buyer"}) {
		t.Errorf("moved = %+v; want %s with notify_buyer released", res.Moved, target.ID)
	}
	if !slices.Equal(res.Walked, []string{mine}) || len(res.NotFound) != 0 {
		t.Errorf("walked = %v, not found %v; want only %s walked", res.Walked, res.NotFound, mine)
	}
	if got := firstMessageID(ctx, t, sq, q.DLQURL, other); got != otherMsgID {
		t.Errorf("head of group %s is message %s; want %s, not walked", other, got, otherMsgID)
	}
	// An id that is nowhere: every group is walked to be sure, and the
	// run says so.
	res, err = r.Run(ctx, Options{EventIDs: []string{"01NOSUCHEVENT"}})
	must(t, err)
	if !slices.Equal(res.NotFound, []string{"01NOSUCHEVENT"}) || len(res.Moved) != 0 {
		t.Errorf("run for a missing id = %+v; want it not found and nothing moved", res)
	}
	if row, _, _ := in.Get(ctx, target.ID, "notify_buyer"); !row.Released {
		t.Errorf("inbox row of %s = %+v; want released", target.ID, row)
	}

	back := enginetest.Drain(ctx, t, sq, q.URL, func(d []enginetest.Drained) bool { return len(d) == 1 })
	if got := eventIDOf(t, back[0].Body); got != target.ID || back[0].GroupID != mine {
		t.Errorf("events queue got %s in group %s; want %s in %s", got, back[0].GroupID, target.ID, mine)
	}
	left := enginetest.Drain(ctx, t, sq, q.DLQURL, func(d []enginetest.Drained) bool { return len(d) == 4 })
	byGroup := map[string][]string{}
	for _, d := range left {
		byGroup[d.GroupID] = append(byGroup[d.GroupID], eventIDOf(t, d.Body))
	}
	if want := ids(envs[0], envs[1], envs[3]); !slices.Equal(byGroup[mine], want) {
		t.Errorf("DLQ group %s after redrive = %v; want %v (same order, without the redriven one)", mine, byGroup[mine], want)
	}
	if !slices.Equal(byGroup[other], ids(otherEnv)) {
		t.Errorf("DLQ group %s = %v; want [%s]", other, byGroup[other], otherEnv.ID)
	}
}

// firstMessageID peeks at the message id of group's head in the DLQ and
// makes it visible again.
func firstMessageID(ctx context.Context, t *testing.T, sq *sqs.Client, url, group string) string {
	t.Helper()
	for range 20 {
		out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameMessageGroupId}})
		must(t, err)
		id := ""
		for _, m := range out.Messages {
			if m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)] == group {
				id = aws.ToString(m.MessageId)
			}
		}
		for i := len(out.Messages) - 1; i >= 0; i-- {
			_, err := sq.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: out.Messages[i].ReceiptHandle})
			must(t, err)
		}
		if id != "" {
			return id
		}
	}
	t.Fatalf("no message of group %s in %s", group, url)
	return ""
}

// fakeInbox and fakeLetters stand in for the stores in the tests on the
// FIFO double, which check only the queue logic.
type fakeInbox struct{}

func (fakeInbox) ReleaseDead(context.Context, string, string) error { return nil }

type fakeLetters struct {
	mu     sync.Mutex
	tenant map[string]string // event id -> tenant with a letter for it
}

func (f *fakeLetters) ForEvent(_ context.Context, tenant, eventID string) ([]deadletter.Letter, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tenant[eventID] == tenant {
		return []deadletter.Letter{{Tenant: tenant, EventID: eventID, Subscription: "notify_buyer"}}, nil
	}
	return nil, nil
}

func (f *fakeLetters) MarkRedriven(context.Context, string, string, string) error { return nil }

// doubleRun redrives opts on a FIFO double that hands out up to ten
// messages of a group per receive, as SQS does.
func doubleRun(t *testing.T, d *enginetest.FIFO, letters map[string]string, opts Options) Result {
	t.Helper()
	r, err := New(Config{Queue: d, QueueURL: d.URL, DLQURL: d.DLQURL, Inbox: fakeInbox{}, DeadLetters: &fakeLetters{tenant: letters},
		Hold: 30 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	must(t, err)
	res, err := r.Run(t.Context(), opts)
	must(t, err)
	return res
}

// live returns the event ids left in url per group, in queue order, and
// how many messages are in flight.
func live(t *testing.T, d *enginetest.FIFO, url string) (map[string][]string, int) {
	t.Helper()
	out := map[string][]string{}
	inFlight := 0
	for _, m := range d.Messages(url) {
		if m.Deleted {
			continue
		}
		if m.InFlight {
			inFlight++
		}
		out[m.Group] = append(out[m.Group], eventIDOf(t, m.Body))
	}
	return out, inFlight
}

// With SQS's ten messages of a group per receive, an event among the
// first ten of its group is moved without walking: the others keep their
// place and their message ids, and none is left in flight.
func TestRedriveOnSQSTakesAnEventAmongTheFirstTenWithoutWalking(t *testing.T) {
	d := enginetest.NewFIFO(enginetest.FIFOConfig{Name: "tenfirst"})
	a := deadEvents(t, d, d.DLQURL, "ta", 8)
	b := deadEvents(t, d, d.DLQURL, "tb", 2)
	res := doubleRun(t, d, nil, Options{EventIDs: []string{a[5].ID, b[1].ID}})
	if got := ids(itemsEnv(res.Moved)...); !slices.Equal(got, []string{a[5].ID, b[1].ID}) && !slices.Equal(got, []string{b[1].ID, a[5].ID}) {
		t.Errorf("moved = %v; want %s and %s", got, a[5].ID, b[1].ID)
	}
	if len(res.Walked) != 0 || len(res.NotFound) != 0 {
		t.Errorf("walked %v, not found %v; want neither", res.Walked, res.NotFound)
	}
	left, inFlight := live(t, d, d.DLQURL)
	want := ids(append(slices.Clone(a[:5]), a[6:]...)...)
	if !slices.Equal(left["ta"], want) || !slices.Equal(left["tb"], ids(b[0])) || inFlight != 0 {
		t.Errorf("DLQ after = %v, %d in flight; want ta %v, tb [%s], none in flight", left, inFlight, want, b[0].ID)
	}
	if n := len(d.Messages(d.DLQURL)); n != 10 {
		t.Errorf("DLQ saw %d messages; want the 10 sent and no copies", n)
	}
	moved, _ := live(t, d, d.URL)
	if !slices.Equal(moved["ta"], ids(a[5])) || !slices.Equal(moved["tb"], ids(b[1])) {
		t.Errorf("events queue = %v; want %s in ta and %s in tb", moved, a[5].ID, b[1].ID)
	}
}

// itemsEnv turns moved items back into envelopes with their ids.
func itemsEnv(items []Item) []engine.Envelope {
	var out []engine.Envelope
	for _, it := range items {
		out = append(out, engine.Envelope{ID: it.EventID})
	}
	return out
}

// An event behind more than ten messages of its group (and so out of
// reach of holding, even on SQS) is reached by walking the group: the
// twelve before it and the two after it end in the same order, a group
// the dead letters do not point to is left alone, and a dry run walks
// nothing and reports the event as not found.
func TestRedriveOnSQSWalksPastTenMessagesInOrder(t *testing.T) {
	d := enginetest.NewFIFO(enginetest.FIFOConfig{Name: "walkten"})
	a := deadEvents(t, d, d.DLQURL, "ta", 15)
	other := deadEvents(t, d, d.DLQURL, "tb", 3)
	target := a[12]
	letters := map[string]string{target.ID: "ta"}

	dry := doubleRun(t, d, letters, Options{EventIDs: []string{target.ID}, DryRun: true})
	if len(dry.Moved) != 0 || !slices.Equal(dry.NotFound, []string{target.ID}) || len(dry.Walked) != 0 {
		t.Errorf("dry run = %+v; want nothing moved or walked and %s not found", dry, target.ID)
	}
	if n := len(d.Messages(d.DLQURL)); n != 18 {
		t.Errorf("after the dry run the DLQ saw %d messages; want 18, no copies", n)
	}

	res := doubleRun(t, d, letters, Options{EventIDs: []string{target.ID}})
	if len(res.Moved) != 1 || res.Moved[0].EventID != target.ID || len(res.NotFound) != 0 {
		t.Fatalf("moved %+v, not found %v; want %s moved", res.Moved, res.NotFound, target.ID)
	}
	if !slices.Equal(res.Walked, []string{"ta"}) {
		t.Errorf("walked = %v; want [ta]", res.Walked)
	}
	left, inFlight := live(t, d, d.DLQURL)
	want := ids(append(slices.Clone(a[:12]), a[13:]...)...)
	if !slices.Equal(left["ta"], want) || !slices.Equal(left["tb"], ids(other...)) || inFlight != 0 {
		t.Errorf("DLQ after = %v, %d in flight; want ta %v and tb %v in order, none in flight", left, inFlight, want, ids(other...))
	}
	moved, _ := live(t, d, d.URL)
	if !slices.Equal(moved["ta"], ids(target)) {
		t.Errorf("events queue = %v; want [%s] in ta", moved, target.ID)
	}
}

// --all moves every event even when a group's head is not an event: the
// group is walked past it and it stays, alone, in the DLQ.
func TestRedriveAllWalksPastAMessageThatIsNotAnEvent(t *testing.T) {
	d := enginetest.NewFIFO(enginetest.FIFOConfig{Name: "walkall"})
	_, err := d.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(d.DLQURL), MessageBody: aws.String("not json"),
		MessageGroupId: aws.String("ta"), MessageDeduplicationId: aws.String("junk")})
	must(t, err)
	a := deadEvents(t, d, d.DLQURL, "ta", 12)
	res := doubleRun(t, d, nil, Options{All: true})
	if got := len(res.Moved); got != 12 {
		t.Errorf("moved %d; want 12", got)
	}
	if len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0].Reason, "not an event") {
		t.Errorf("skipped = %+v; want the one body that is not an event", res.Skipped)
	}
	moved, _ := live(t, d, d.URL)
	if !slices.Equal(moved["ta"], ids(a...)) {
		t.Errorf("events queue = %v; want all 12 in order", moved["ta"])
	}
	left, inFlight := live(t, d, d.DLQURL)
	if len(left["ta"]) != 1 || inFlight != 0 {
		t.Errorf("DLQ after = %v, %d in flight; want only the junk message, visible", left, inFlight)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A run that outlasts Hold keeps its messages held (it renews their
// visibility) and releases them all at the end: with a two-second hold,
// many groups and a walk, the event is found, every group keeps its order
// and nothing is left in flight.
func TestRedriveOutlastingItsHoldKeepsOrder(t *testing.T) {
	d := enginetest.NewFIFO(enginetest.FIFOConfig{Name: "shorthold"})
	a := deadEvents(t, d, d.DLQURL, "ta", 13)
	others := map[string][]engine.Envelope{}
	for i := range 11 {
		g := fmt.Sprintf("t%02d", i)
		others[g] = deadEvents(t, d, d.DLQURL, g, 2)
	}
	target := a[11]
	r, err := New(Config{Queue: d, QueueURL: d.URL, DLQURL: d.DLQURL, Inbox: fakeInbox{},
		DeadLetters: &fakeLetters{tenant: map[string]string{target.ID: "ta"}}, Hold: 2 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	must(t, err)
	res, err := r.Run(t.Context(), Options{EventIDs: []string{target.ID}})
	must(t, err)
	if len(res.Moved) != 1 || res.Moved[0].EventID != target.ID {
		t.Fatalf("moved = %+v; want %s", res.Moved, target.ID)
	}
	left, inFlight := live(t, d, d.DLQURL)
	if want := ids(append(slices.Clone(a[:11]), a[12])...); !slices.Equal(left["ta"], want) {
		t.Errorf("DLQ group ta = %v; want %v", left["ta"], want)
	}
	for g, envs := range others {
		if !slices.Equal(left[g], ids(envs...)) {
			t.Errorf("DLQ group %s = %v; want %v", g, left[g], ids(envs...))
		}
	}
	if inFlight != 0 {
		t.Errorf("%d messages still in flight; want none", inFlight)
	}
}
