package worker

import (
	"context"
	"fmt"
	"strconv"
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
	"github.com/bowline-iot/bowline/internal/faultproxy"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
)

// receiveCounts wraps a queue and remembers the highest
// ApproximateReceiveCount SQS reported for each message.
type receiveCounts struct {
	QueueAPI
	mu  sync.Mutex
	max map[string]int
}

func (r *receiveCounts) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	out, err := r.QueueAPI.ReceiveMessage(ctx, in, opts...)
	if err == nil {
		r.mu.Lock()
		for _, m := range out.Messages {
			n, _ := strconv.Atoi(m.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
			r.max[aws.ToString(m.MessageId)] = max(r.max[aws.ToString(m.MessageId)], n)
		}
		r.mu.Unlock()
	}
	return out, err
}

func (r *receiveCounts) get() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.max {
		out[k] = v
	}
	return out
}

// An inbox outage (every DynamoDB write throttled or answered 500 by a
// fault proxy in front of DynamoDB Local) three visibility timeouts long,
// on a queue whose maxReceiveCount is 2, spends no receive: the worker
// holds the messages, keeps them invisible and retries the writes with a
// capped exponential backoff. Nothing reaches the DLQ, no dead letter is
// written, per-tenant order holds and every claim is the first. (The
// compressed stand-in for a 60 s DynamoDB outage against a 30-60 s
// visibility timeout and maxReceiveCount 5: the old worker made every
// failed write visible again after 1 s, so a few seconds of throttling
// moved every in-flight message to the DLQ.)
func TestInboxOutageSpendsNoReceives(t *testing.T) {
	const visibility = 2 * time.Second
	h := newHarness(t, visibility, 2)
	stack := lstest.Stack(t)
	proxy := faultproxy.Start(t, stack.DynamoDBEndpoint)
	ddb := dynamodb.NewFromConfig(lstest.AWSConfig(t), awsenv.DynamoDBOptions, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(proxy.URL())
		o.RetryMaxAttempts = 1 // every refused call reaches the worker
	})
	names := lstest.Names(t)
	var err error
	if h.inbox, err = inbox.New(inbox.Config{Client: ddb, Table: names.InboxTable()}); err != nil {
		t.Fatal(err)
	}
	if h.dl, err = deadletter.New(ddb, names.DeadLettersTable(), nil); err != nil {
		t.Fatal(err)
	}
	counts := &receiveCounts{QueueAPI: h.queue, max: map[string]int{}}
	h.queue = counts
	// Throttling and 500s, alternately, on every write.
	proxy.SetRule(func(op string, n int) (faultproxy.Fault, bool) {
		if op != "UpdateItem" && op != "PutItem" {
			return faultproxy.Fault{}, false
		}
		if n%2 == 0 {
			return faultproxy.InternalError, true
		}
		return faultproxy.Throttling, true
	})

	var mu sync.Mutex
	var order []string
	h.start([]engine.Subscription{durable("record_intake", "bowl.*", func(_ context.Context, env engine.Envelope) error {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, fmt.Sprintf("%s/%d", env.Tenant, env.Seq))
		return nil
	})}, func(c *Config) {
		c.MaxReceiveCount = 2
		c.InfraBackoffBase, c.InfraBackoffMax = 100*time.Millisecond, time.Second
	})
	a, b := h.tenant+"a", h.tenant+"b"
	var envs []engine.Envelope
	for seq := uint64(1); seq <= 3; seq++ {
		envs = append(envs, enginetest.Envelope(t, a, "bowl.refilled", seq, nil))
	}
	envs = append(envs, enginetest.Envelope(t, b, "bowl.refilled", 1, nil))
	for _, env := range envs {
		h.send(env)
	}
	h.waitFor("the outage to be felt", func() bool { return proxy.Faulted("UpdateItem") >= 4 })
	// The outage lasts three visibility timeouts: without the keeper and
	// the held retries, each message would be received again at least
	// twice and moved to the DLQ.
	time.Sleep(3 * visibility)
	proxy.Heal()
	for _, env := range envs {
		h.waitFor("completion after the outage", func() bool { return h.row(env.ID, "record_intake").Status == inbox.Completed })
	}
	h.waitFor("queue drained", func() bool { return h.depth(h.q.URL) == 0 })
	if n := h.depth(h.q.DLQURL); n != 0 {
		t.Errorf("DLQ depth = %d; want 0", n)
	}
	for id, n := range counts.get() {
		if n != 1 {
			t.Errorf("message %s received %d times; want once", id, n)
		}
	}
	for _, env := range envs {
		if r := h.row(env.ID, "record_intake"); r.Attempts != 1 {
			t.Errorf("event %s/%d: %d claims; want 1", env.Tenant, env.Seq, r.Attempts)
		}
		if letters, _ := h.dl.ForEvent(h.ctx, env.Tenant, env.ID); len(letters) != 0 {
			t.Errorf("event %s/%d: dead letters %+v; want none", env.Tenant, env.Seq, letters)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var ofA []string
	for _, o := range order {
		if strings.HasPrefix(o, a+"/") {
			ofA = append(ofA, o)
		}
	}
	if got, want := fmt.Sprint(ofA), fmt.Sprintf("[%s/1 %s/2 %s/3]", a, a, a); got != want {
		t.Errorf("handler runs of %s = %s; want %s", a, got, want)
	}
	if n := h.obs.get("infra:claim"); n == 0 {
		t.Error("no claim retried after an infrastructure fault; want the outage to have been ridden out by retries")
	}
	t.Logf("fault proxy refused %d UpdateItem calls", proxy.Faulted("UpdateItem"))
}
