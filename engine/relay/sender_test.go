package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/enginetest"
	"github.com/bowline-iot/bowline/internal/backoff"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// The sender tests run the relay's send against the SQS FIFO double
// (engine/enginetest), which enforces what SQS documents and fauxqs does
// not: the body character set, the 262,144-byte message and batch limits,
// and per-entry failures (injected).

const deadURL = "https://sqs.double.local/000000000000/pipes-dlq"

// router sends to the FIFO double, but keeps what goes to deadURL.
type router struct {
	fifo *enginetest.FIFO
	mu   sync.Mutex
	dead []DeadLetter
}

func (q *router) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	if aws.ToString(in.QueueUrl) != deadURL {
		return q.fifo.SendMessageBatch(ctx, in, opts...)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		var dl DeadLetter
		if err := json.Unmarshal([]byte(aws.ToString(e.MessageBody)), &dl); err != nil {
			return nil, fmt.Errorf("dead letter %s is not JSON: %w", aws.ToString(e.MessageBody), err)
		}
		q.dead = append(q.dead, dl)
		out.Successful = append(out.Successful, sqstypes.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String("dl")})
	}
	return out, nil
}

func (q *router) letters() []DeadLetter {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]DeadLetter(nil), q.dead...)
}

type countingObserver struct {
	NopObserver
	deadLettered atomic.Int64
}

func (o *countingObserver) DeadLettered() { o.deadLettered.Add(1) }

// sendRelay is a relay that only sends: no stream, no checkpoints, and no
// pause between resends.
func sendRelay(t *testing.T, q QueueAPI, url string, obs Observer) *Relay {
	t.Helper()
	p, err := Compile(EventsPipe)
	if err != nil {
		t.Fatal(err)
	}
	return &Relay{
		cfg:  Config{Pipe: EventsPipe, Queue: q, QueueURL: url, DeadLetterURL: deadURL, StreamARN: "arn:aws:dynamodb:local:000000000000:table/events/stream/x"},
		pipe: p, log: testkit.Logger(t, slog.LevelError), obs: obs, backoff: backoff.Policy{},
	}
}

func msg(group, id, body string) Message {
	return Message{Body: body, GroupID: group, DedupID: id, Sequence: id, Shard: "shard-1", Created: time.Now()}
}

// groupOrder returns the dedup ids of group's messages in queue order.
func groupOrder(f *enginetest.FIFO, group string) []string {
	var ids []string
	for _, m := range f.Messages(f.URL) {
		if m.Group == group {
			ids = append(ids, m.DedupID)
		}
	}
	return ids
}

// TestPartialBatchFailureKeepsGroupOrder: SQS refuses a2 twice while
// accepting the rest of the batch; a tenant's messages must still reach
// the queue in stream order (a1..a5), not with a2 behind a3..a5.
func TestPartialBatchFailureKeepsGroupOrder(t *testing.T) {
	f := enginetest.NewFIFO(enginetest.FIFOConfig{})
	f.InjectSendFailure("a2", 2)
	r := sendRelay(t, &router{fifo: f}, f.URL, NopObserver{})
	var msgs []Message
	for _, id := range []string{"a1", "b1", "a2", "b2", "a3", "b3", "a4", "a5"} {
		msgs = append(msgs, msg("tenant-"+id[:1], id, `{"id":"`+id+`"}`))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := r.send(ctx, msgs); err != nil {
		t.Fatalf("send = %v; want nil", err)
	}
	if got, want := strings.Join(groupOrder(f, "tenant-a"), ","), "a1,a2,a3,a4,a5"; got != want {
		t.Errorf("tenant-a order in the queue = %s; want %s", got, want)
	}
	if got, want := strings.Join(groupOrder(f, "tenant-b"), ","), "b1,b2,b3"; got != want {
		t.Errorf("tenant-b order in the queue = %s; want %s", got, want)
	}
}

// TestBatchOverSizeLimitIsSplit: ten 40,000-byte messages are 400,000
// bytes, over SQS's 262,144-byte limit for a batch's bodies together
// (BatchRequestTooLong); the relay must split them, not retry for ever.
func TestBatchOverSizeLimitIsSplit(t *testing.T) {
	f := enginetest.NewFIFO(enginetest.FIFOConfig{})
	r := sendRelay(t, &router{fifo: f}, f.URL, NopObserver{})
	var msgs []Message
	for i := range 10 {
		id := fmt.Sprintf("e%d", i)
		msgs = append(msgs, msg("tenant-"+id, id, `{"pad":"`+strings.Repeat("x", 40000)+`"}`))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := r.send(ctx, msgs); err != nil {
		t.Fatalf("send of 10 × 40 kB = %v; want nil (split into batches of at most %d bytes)", err, MaxMessageBytes)
	}
	if got := len(f.Messages(f.URL)); got != 10 {
		t.Errorf("queue holds %d messages; want 10", got)
	}
}

// TestUndeliverableRecordsAreDeadLettered: a body over SQS's message limit
// and a message SQS refuses more often than Failure.MaxRetryAttempts both
// become dead letters (counted for the alarm), never silent skips, and the
// messages behind them in their group are delivered in order.
func TestUndeliverableRecordsAreDeadLettered(t *testing.T) {
	f := enginetest.NewFIFO(enginetest.FIFOConfig{})
	f.InjectSendFailure("b1", Failure.MaxRetryAttempts+1)
	q := &router{fifo: f}
	obs := &countingObserver{}
	r := sendRelay(t, q, f.URL, obs)
	msgs := []Message{
		msg("tenant-a", "a1", `{"pad":"`+strings.Repeat("x", MaxMessageBytes)+`"}`),
		msg("tenant-a", "a2", `{"id":"a2"}`),
		msg("tenant-b", "b1", `{"id":"b1"}`),
		msg("tenant-b", "b2", `{"id":"b2"}`),
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := r.send(ctx, msgs); err != nil {
		t.Fatalf("send = %v; want nil", err)
	}
	letters := q.letters()
	got := map[string]DeadLetter{}
	for _, dl := range letters {
		got[dl.DedupID] = dl
	}
	if len(letters) != 2 || got["a1"].Condition != ConditionUnsendable || got["b1"].Condition != ConditionRetryAttemptsExhausted {
		t.Fatalf("dead letters = %+v; want a1 %s and b1 %s", letters, ConditionUnsendable, ConditionRetryAttemptsExhausted)
	}
	if dl := got["b1"]; dl.Refused != Failure.MaxRetryAttempts+1 || dl.BatchInfo.ShardID != "shard-1" || dl.BatchInfo.StartSequenceNumber != "b1" || dl.GroupID != "tenant-b" {
		t.Errorf("b1's dead letter = %+v; want refused %d, shard-1, seq b1, group tenant-b", dl, Failure.MaxRetryAttempts+1)
	}
	if n := obs.deadLettered.Load(); n != 2 {
		t.Errorf("DeadLettered counted %d; want 2", n)
	}
	if a, b := strings.Join(groupOrder(f, "tenant-a"), ","), strings.Join(groupOrder(f, "tenant-b"), ","); a != "a2" || b != "b2" {
		t.Errorf("queue holds tenant-a %q, tenant-b %q; want a2 and b2", a, b)
	}
}

// TestBodyEscapesCharactersSQSRefuses: an event whose payload holds U+FFFE
// and U+FFFF (valid in JSON and DynamoDB, refused by SQS) transforms into a
// body SQS accepts; decoded, it is the same event and its hash verifies.
func TestBodyEscapesCharactersSQSRefuses(t *testing.T) {
	env := enginetest.Envelope(t, "t1", "order.placed", 1, map[string]any{"customer_id": "c\uFFFE-\uFFFF-\u00e9-\U0001F600"})
	p, err := Compile(EventsPipe)
	if err != nil {
		t.Fatal(err)
	}
	m, ok, err := p.Transform(record(t, "INSERT", enginetest.Body(t, env)))
	if err != nil || !ok {
		t.Fatalf("Transform ok=%v err=%v; want ok", ok, err)
	}
	m.Created = time.Now() // the fixture record is from 2023
	if i := strings.IndexFunc(m.Body, func(r rune) bool { return !enginetest.ValidBodyRune(r) }); i >= 0 {
		t.Fatalf("body holds a character SQS refuses at byte %d: %q", i, m.Body)
	}
	f := enginetest.NewFIFO(enginetest.FIFOConfig{})
	r := sendRelay(t, &router{fifo: f}, f.URL, NopObserver{})
	if err := r.send(t.Context(), []Message{m}); err != nil {
		t.Fatal(err)
	}
	got := f.Messages(f.URL)
	if len(got) != 1 {
		t.Fatalf("queue holds %d messages; want 1", len(got))
	}
	dec, err := engine.DecodeImageJSON([]byte(got[0].Body))
	if err != nil {
		t.Fatalf("decode body: %v", err)
	}
	if dec.Payload["customer_id"] != env.Payload["customer_id"] {
		t.Errorf("decoded customer_id = %q; want %q", dec.Payload["customer_id"], env.Payload["customer_id"])
	}
	h, err := engine.ChainHash(dec.PrevHash, dec)
	if err != nil || h != env.Hash || dec.Hash != env.Hash {
		t.Errorf("decoded event hash = %s (stored %s, err %v); want %s", h, dec.Hash, err, env.Hash)
	}
}

func TestEscapeJSON(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":"plain"}`:                      `{"a":"plain"}`,
		"{\"a\":\"x\uFFFEy\"}":               `{"a":"x\ufffey"}`,
		"{\"a\":\"\uFFFF\"}":                 `{"a":"\uffff"}`,
		"{\"a\":\"\uFFFD\u00e9\U0001F600\"}": "{\"a\":\"\uFFFD\u00e9\U0001F600\"}",
	} {
		if got := EscapeJSON(in); got != want {
			t.Errorf("EscapeJSON(%q) = %q; want %q", in, got, want)
		}
		var a, b any
		if json.Unmarshal([]byte(in), &a) != nil || json.Unmarshal([]byte(EscapeJSON(in)), &b) != nil || fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("EscapeJSON(%q) decodes to %v; want %v", in, b, a)
		}
	}
}
