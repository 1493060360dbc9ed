package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/oklog/ulid/v2"
)

// FIFO is an in-memory SQS FIFO queue and its FIFO dead-letter queue that
// behave as the SQS documentation describes, where the local emulator
// (fauxqs) does not: it hands out up to ten messages of one group per
// receive, and it rejects stale receipt handles. It serves the calls the
// engine's consumers make (ReceiveMessage, DeleteMessage[Batch],
// ChangeMessageVisibility[Batch], SendMessage[Batch], GetQueueAttributes)
// on two URLs, URL and DLQURL, in real time. It is safe for concurrent use.
//
// The behaviours, with the documentation they follow:
//
//   - Receive (SQS Developer Guide, "FIFO queue delivery logic"): "Amazon
//     SQS attempts to return as many messages with the same message group
//     ID as possible" in one call (MaxNumberOfMessages, at most 10); "you
//     can't receive additional messages from the same message group ID
//     unless the currently received messages are deleted, or they become
//     visible again"; if fewer than ten of one group are available, other
//     groups fill the batch, each in its FIFO order. A group's messages
//     behind one in flight are held back; a received message that became
//     visible again ahead of one still in flight (a head given back while
//     later messages of its group are held) can be received again, as SQS
//     does.
//   - Visibility ("Amazon SQS visibility timeout"): a received message is
//     invisible for the queue's VisibilityTimeout (or the receive's); when
//     it expires without a delete the message is available again, at the
//     head of its group, and the next receive increments its
//     ApproximateReceiveCount.
//   - ChangeMessageVisibility (API reference): the new timeout counts from
//     the call; 0 makes the message visible at once; a total beyond 12 hours
//     from the receive is rejected (InvalidParameterValue).
//   - Receipt handles (DeleteMessage and ChangeMessageVisibility API
//     reference; the AWS Knowledge Center on ReceiptHandleIsInvalid and
//     InvalidParameterValue errors): a handle never issued fails with
//     ReceiptHandleIsInvalid. On a FIFO queue a handle that is not the
//     message's current one (its visibility lapsed, or a later receive
//     superseded it) fails with InvalidParameterValue, "The receipt handle
//     has expired", for a delete as for a visibility change, rather than
//     the standard queue's silent success; a visibility change on a
//     deleted message fails with InvalidParameterValue, "Message does not
//     exist or is not available for visibility timeout change"; repeating
//     the delete that removed a message succeeds.
//   - Batch calls (SendMessageBatch, DeleteMessageBatch,
//     ChangeMessageVisibilityBatch; "Amazon SQS message quotas"): 1-10
//     entries (EmptyBatchRequest, TooManyEntriesInBatchRequest) whose Ids
//     are 1-80 characters of a-z, A-Z, 0-9, hyphen and underscore
//     (InvalidBatchEntryId) and distinct (BatchEntryIdsNotDistinct), each
//     entry's result reported on its own, failures in Failed with
//     SenderFault.
//   - Redrive ("Using dead-letter queues"): when a message's receive count
//     would exceed the RedrivePolicy's maxReceiveCount, the receive moves it
//     to the dead-letter queue (same MessageId, body and group) instead of
//     returning it.
//   - Send: MessageGroupId is required; a MessageDeduplicationId seen in the
//     last five minutes is accepted and not enqueued again (the
//     deduplication interval).
//   - Message contents (SendMessage and SendMessageBatch API reference): a
//     body may hold only #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD
//     | #x10000 to #x10FFFF, anything else fails with InvalidMessageContents
//     (fauxqs also refuses #x10000 to #x10FFFF); a body is at most
//     MaxMessageBytes (262,144 bytes, the queue's MaximumMessageSize);
//     group and deduplication ids are 1-128 characters of a-z, A-Z, 0-9
//     and punctuation.
//
// One limit is kept stricter than SQS on purpose: a batch's bodies
// together at most MaxMessageBytes (BatchRequestTooLong, failing the whole
// call), where SQS now allows 1 MiB. The relay splits its batches at the
// queue's MaximumMessageSize (docs/relay.md, "Size"), and the double
// refusing more is what makes the relay's tests check it.
//
// The conformance suite (conformance_test.go) runs the same checks on the
// double and on fauxqs and lists where either differs from the
// documentation (docs/local-stack.md, "SQS FIFO: fauxqs, the double and
// the documentation").
//
// Not modelled: delays, message attributes, content-based deduplication,
// the 120,000 in-flight limit, high-throughput mode (per-group
// deduplication scope).
type FIFO struct {
	// URL and DLQURL are the queue URLs the double answers.
	URL, DLQURL string

	visibility time.Duration
	maxReceive int

	mu      sync.Mutex
	main    *fifoQueue
	dlq     *fifoQueue
	changed chan struct{} // closed and replaced on every change, for long polls
	calls   map[string]int
	errs    map[string]int
	// failSends: deduplication id -> how many more sends of it fail with
	// a server error (InjectSendFailure).
	failSends map[string]int
}

// MaxMessageBytes is SQS's limit on one message body and on the bodies of
// one SendMessageBatch together: 262,144 bytes (256 KiB), the
// MaximumMessageSize of the stack's queues (SendMessageBatch API
// reference; newer queues may be raised to 1 MiB, ours are not).
const MaxMessageBytes = 256 << 10

// ValidBodyRune reports whether SQS accepts r in a message body: #x9 | #xA
// | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF
// (SendMessage API reference: anything else fails with
// InvalidMessageContents).
func ValidBodyRune(r rune) bool {
	return r == 0x9 || r == 0xA || r == 0xD || 0x20 <= r && r <= 0xD7FF || 0xE000 <= r && r <= 0xFFFD || 0x10000 <= r && r <= 0x10FFFF
}

// InjectSendFailure makes the next times sends of the message with
// deduplication id dedup fail as SQS reports a transient fault: a batch
// entry in Failed with SenderFault false and code InternalError, or a
// SendMessage error. Other entries of the same batch are still enqueued,
// as SQS reports each entry's result on its own.
func (f *FIFO) InjectSendFailure(dedup string, times int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failSends[dedup] += times
}

// FIFOConfig configures a FIFO double.
type FIFOConfig struct {
	// Name is the queue name, ".fifo" added; default "double".
	Name string
	// Visibility is the queue's VisibilityTimeout, in whole seconds.
	// Default 30s.
	Visibility time.Duration
	// MaxReceiveCount is the RedrivePolicy's maxReceiveCount; 0 means no
	// redrive policy.
	MaxReceiveCount int
}

// NewFIFO returns an empty FIFO double.
func NewFIFO(cfg FIFOConfig) *FIFO {
	if cfg.Name == "" {
		cfg.Name = "double"
	}
	if cfg.Visibility <= 0 {
		cfg.Visibility = 30 * time.Second
	}
	cfg.Visibility = time.Duration(math.Ceil(cfg.Visibility.Seconds())) * time.Second
	base := "https://sqs.double.local/000000000000/"
	f := &FIFO{
		URL: base + cfg.Name + ".fifo", DLQURL: base + cfg.Name + "-dlq.fifo",
		visibility: cfg.Visibility, maxReceive: cfg.MaxReceiveCount,
		main: newFIFOQueue(cfg.Name + ".fifo"), dlq: newFIFOQueue(cfg.Name + "-dlq.fifo"),
		changed: make(chan struct{}), calls: map[string]int{}, errs: map[string]int{}, failSends: map[string]int{},
	}
	return f
}

// FIFOMessage is a snapshot of one message of a FIFO double.
type FIFOMessage struct {
	ID, Group, Body, DedupID string
	// Receives is its receive count so far.
	Receives int
	// InFlight: received and neither deleted nor visible again.
	InFlight bool
	// Deleted: removed by DeleteMessage (still listed by Messages).
	Deleted bool
}

// Messages returns every message ever enqueued on url (URL or DLQURL),
// deleted ones included, in send order.
func (f *FIFO) Messages(url string) []FIFOMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queue(url)
	if q == nil {
		return nil
	}
	now := time.Now()
	var out []FIFOMessage
	for _, m := range q.all {
		out = append(out, FIFOMessage{ID: m.id, Group: m.group, Body: m.body, DedupID: m.dedup,
			Receives: m.receives, InFlight: !m.deleted && m.inFlight(now), Deleted: m.deleted})
	}
	return out
}

// Calls returns how many calls of op ("DeleteMessageBatch", say) the
// double served.
func (f *FIFO) Calls(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// Errors returns how many calls or batch entries of op failed.
func (f *FIFO) Errors(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.errs[op]
}

type fifoQueue struct {
	name     string
	all      []*fifoMsg // every message, in send order (deleted ones too)
	dedup    map[string]dedupSeen
	receipts map[string]*fifoMsg // every handle ever issued
	seq      int64
}

type dedupSeen struct {
	id string
	at time.Time
}

type fifoMsg struct {
	id, body, group, dedup string
	seq                    int64
	sent                   time.Time
	receives               int
	firstReceive           time.Time
	// receipt is the current handle while in flight, "" otherwise;
	// receivedAt is when it was issued (the 12-hour cap counts from it).
	receipt        string
	receivedAt     time.Time
	invisibleUntil time.Time
	deleted        bool
	deletedBy      string
}

func newFIFOQueue(name string) *fifoQueue {
	return &fifoQueue{name: name, dedup: map[string]dedupSeen{}, receipts: map[string]*fifoMsg{}}
}

// inFlight reports whether m is received and its visibility has not
// expired.
func (m *fifoMsg) inFlight(now time.Time) bool {
	return m.receipt != "" && now.Before(m.invisibleUntil)
}

// expire ends the in-flight state of messages whose visibility timeout
// passed: their handle is no longer current.
func (q *fifoQueue) expire(now time.Time) {
	for _, m := range q.all {
		if m.receipt != "" && !m.deleted && !now.Before(m.invisibleUntil) {
			m.receipt = ""
		}
	}
}

func (f *FIFO) queue(url string) *fifoQueue {
	switch url {
	case f.URL:
		return f.main
	case f.DLQURL:
		return f.dlq
	}
	return nil
}

// notify wakes long polls; call with f.mu held.
func (f *FIFO) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func apiError(code, msg string) error {
	return &smithy.GenericAPIError{Code: code, Message: msg, Fault: smithy.FaultClient}
}

func (f *FIFO) begin(op, url string) (*fifoQueue, error) {
	f.calls[op]++
	q := f.queue(url)
	if q == nil {
		f.errs[op]++
		return nil, &sqstypes.QueueDoesNotExist{Message: aws.String("The specified queue does not exist: " + url)}
	}
	return q, nil
}

// SendMessage enqueues one message; MessageGroupId and
// MessageDeduplicationId are required.
func (f *FIFO) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.begin("SendMessage", aws.ToString(in.QueueUrl))
	if err != nil {
		return nil, err
	}
	id, seq, err := f.send(q, aws.ToString(in.MessageBody), aws.ToString(in.MessageGroupId), aws.ToString(in.MessageDeduplicationId))
	if err != nil {
		f.errs["SendMessage"]++
		return nil, err
	}
	return &sqs.SendMessageOutput{MessageId: aws.String(id), SequenceNumber: aws.String(strconv.FormatInt(seq, 10))}, nil
}

// SendMessageBatch enqueues up to ten messages.
func (f *FIFO) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.begin("SendMessageBatch", aws.ToString(in.QueueUrl))
	if err != nil {
		return nil, err
	}
	out := &sqs.SendMessageBatchOutput{}
	tooLong := func() error {
		total := 0
		for _, e := range in.Entries {
			total += len(aws.ToString(e.MessageBody))
		}
		if total > MaxMessageBytes {
			return &sqstypes.BatchRequestTooLong{Message: aws.String(fmt.Sprintf("Batch requests cannot be longer than %d bytes. You have sent %d bytes.", MaxMessageBytes, total))}
		}
		return nil
	}
	out.Failed, err = batch(f, "SendMessageBatch", in.Entries, func(e sqstypes.SendMessageBatchRequestEntry) *string { return e.Id }, tooLong,
		func(e sqstypes.SendMessageBatchRequestEntry) error {
			id, seq, err := f.send(q, aws.ToString(e.MessageBody), aws.ToString(e.MessageGroupId), aws.ToString(e.MessageDeduplicationId))
			if err == nil {
				out.Successful = append(out.Successful, sqstypes.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String(id), SequenceNumber: aws.String(strconv.FormatInt(seq, 10))})
			}
			return err
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// dedupInterval is SQS's deduplication interval.
const dedupInterval = 5 * time.Minute

func (f *FIFO) send(q *fifoQueue, body, group, dedup string) (string, int64, error) {
	switch {
	case group == "":
		return "", 0, apiError("MissingParameter", "The request must contain the parameter MessageGroupId.")
	case dedup == "":
		return "", 0, apiError("InvalidParameterValue", "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly")
	case body == "":
		return "", 0, apiError("MissingParameter", "The request must contain the parameter MessageBody.")
	case len(body) > MaxMessageBytes:
		return "", 0, apiError("InvalidParameterValue", fmt.Sprintf("One or more parameters are invalid. Reason: Message must be shorter than %d bytes.", MaxMessageBytes))
	case !validID(group):
		return "", 0, apiError("InvalidParameterValue", "Value "+group+" for parameter MessageGroupId is invalid.")
	case !validID(dedup):
		return "", 0, apiError("InvalidParameterValue", "Value "+dedup+" for parameter MessageDeduplicationId is invalid.")
	}
	if i := strings.IndexFunc(body, func(r rune) bool { return !ValidBodyRune(r) }); i >= 0 || !utf8.ValidString(body) {
		return "", 0, &sqstypes.InvalidMessageContents{Message: aws.String(fmt.Sprintf("Invalid characters found (at byte %d). Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF", i))}
	}
	if f.failSends[dedup] > 0 {
		f.failSends[dedup]--
		return "", 0, &smithy.GenericAPIError{Code: "InternalError", Message: "injected transient failure", Fault: smithy.FaultServer}
	}
	now := time.Now()
	if seen, ok := q.dedup[dedup]; ok && now.Sub(seen.at) < dedupInterval {
		for _, m := range q.all {
			if m.id == seen.id {
				return m.id, m.seq, nil
			}
		}
	}
	q.seq++
	m := &fifoMsg{id: ulid.Make().String(), body: body, group: group, dedup: dedup, seq: q.seq, sent: now}
	q.all = append(q.all, m)
	q.dedup[dedup] = dedupSeen{id: m.id, at: now}
	f.notify()
	return m.id, m.seq, nil
}

// ReceiveMessage returns up to MaxNumberOfMessages (1-10, default 1)
// messages, as many of one group as possible, and long-polls up to
// WaitTimeSeconds when none is available.
func (f *FIFO) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	max := int(in.MaxNumberOfMessages)
	if max == 0 {
		max = 1
	}
	if max < 1 || max > 10 {
		return nil, apiError("InvalidParameterValue", fmt.Sprintf("Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10.", max))
	}
	vis := f.visibility
	if in.VisibilityTimeout != 0 {
		vis = time.Duration(in.VisibilityTimeout) * time.Second
	}
	want := map[string]bool{}
	for _, n := range in.MessageSystemAttributeNames {
		want[string(n)] = true
	}
	for _, n := range in.AttributeNames { // deprecated, still honoured by SQS
		want[string(n)] = true
	}
	deadline := time.Now().Add(time.Duration(in.WaitTimeSeconds) * time.Second)
	for first := true; ; first = false {
		f.mu.Lock()
		if first {
			if _, err := f.begin("ReceiveMessage", aws.ToString(in.QueueUrl)); err != nil {
				f.mu.Unlock()
				return nil, err
			}
		}
		q := f.queue(aws.ToString(in.QueueUrl))
		msgs, nextExpiry := f.receive(q, max, vis, want)
		changed := f.changed
		f.mu.Unlock()
		now := time.Now()
		if len(msgs) > 0 || !now.Before(deadline) {
			return &sqs.ReceiveMessageOutput{Messages: msgs}, nil
		}
		wait := deadline.Sub(now)
		if !nextExpiry.IsZero() && nextExpiry.Sub(now) < wait {
			wait = max0(nextExpiry.Sub(now))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
}

func max0(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return time.Millisecond
	}
	return d
}

// receive takes up to max messages off q; it also returns when the next
// in-flight message's visibility expires (zero when none), so a long poll
// can wake for it.
func (f *FIFO) receive(q *fifoQueue, max int, vis time.Duration, want map[string]bool) ([]sqstypes.Message, time.Time) {
	now := time.Now()
	q.expire(now)
	// A message is available when it is neither deleted nor in flight and
	// no earlier message of its group is in flight.
	avail := map[*fifoMsg]bool{}
	behind := map[string]bool{} // group -> an earlier message is in flight
	var nextExpiry time.Time
	for _, m := range q.all {
		switch {
		case m.deleted:
		case m.inFlight(now):
			behind[m.group] = true
			if nextExpiry.IsZero() || m.invisibleUntil.Before(nextExpiry) {
				nextExpiry = m.invisibleUntil
			}
		case !behind[m.group]:
			avail[m] = true
		}
	}
	var out []sqstypes.Message
	visited := map[string]bool{}
	for len(out) < max {
		// The group of the oldest available message, then as many of its
		// available messages as fit, in order.
		group := ""
		for _, m := range q.all {
			if avail[m] && !visited[m.group] {
				group = m.group
				break
			}
		}
		if group == "" {
			break
		}
		visited[group] = true
		for _, m := range q.all {
			if len(out) == max {
				break
			}
			if !avail[m] || m.group != group {
				continue
			}
			if q == f.main && f.maxReceive > 0 && m.receives >= f.maxReceive {
				f.moveToDLQ(m)
				continue
			}
			m.receives++
			if m.firstReceive.IsZero() {
				m.firstReceive = now
			}
			m.receipt = "rh-" + ulid.Make().String()
			m.receivedAt = now
			m.invisibleUntil = now.Add(vis)
			q.receipts[m.receipt] = m
			if nextExpiry.IsZero() || m.invisibleUntil.Before(nextExpiry) {
				nextExpiry = m.invisibleUntil
			}
			out = append(out, received(m, want))
		}
	}
	return out, nextExpiry
}

// moveToDLQ moves m from the main queue to the DLQ: same id, body and
// group; it leaves the main queue as if deleted.
func (f *FIFO) moveToDLQ(m *fifoMsg) {
	m.deleted, m.deletedBy, m.receipt = true, "redrive", ""
	f.dlq.seq++
	moved := &fifoMsg{id: m.id, body: m.body, group: m.group, dedup: m.dedup, seq: f.dlq.seq, sent: time.Now()}
	f.dlq.all = append(f.dlq.all, moved)
}

func received(m *fifoMsg, want map[string]bool) sqstypes.Message {
	all := want["All"]
	attrs := map[string]string{}
	add := func(name, v string) {
		if all || want[name] {
			attrs[name] = v
		}
	}
	add("ApproximateReceiveCount", strconv.Itoa(m.receives))
	add("ApproximateFirstReceiveTimestamp", strconv.FormatInt(m.firstReceive.UnixMilli(), 10))
	add("MessageGroupId", m.group)
	add("MessageDeduplicationId", m.dedup)
	add("SequenceNumber", strconv.FormatInt(m.seq, 10))
	add("SentTimestamp", strconv.FormatInt(m.sent.UnixMilli(), 10))
	add("SenderId", "000000000000")
	return sqstypes.Message{MessageId: aws.String(m.id), ReceiptHandle: aws.String(m.receipt), Body: aws.String(m.body), Attributes: attrs}
}

// handle resolves a receipt handle for op: the message it is the current
// handle of, or the error SQS gives: ReceiptHandleIsInvalid for a handle
// never issued, InvalidParameterValue for one that was (expired or
// superseded; or, for a visibility change, its message deleted).
func (q *fifoQueue) handle(op, rh string, now time.Time) (*fifoMsg, error) {
	m, ok := q.receipts[rh]
	if !ok {
		return nil, &sqstypes.ReceiptHandleIsInvalid{Message: aws.String(fmt.Sprintf("The input receipt handle %q is not a valid receipt handle.", rh))}
	}
	switch {
	case m.deleted && op == "delete" && m.deletedBy == rh:
		return m, nil // repeating the delete that removed it
	case m.deleted && op == "visibility":
		return nil, invalidHandle(rh, "Message does not exist or is not available for visibility timeout change.")
	case !m.deleted && m.receipt == rh && m.inFlight(now):
		return m, nil
	}
	return nil, invalidHandle(rh, "The receipt handle has expired.")
}

// invalidHandle is SQS's answer to a receipt handle it issued that is no
// longer good for the call.
func invalidHandle(rh, reason string) error {
	return apiError("InvalidParameterValue", fmt.Sprintf("Value %s for parameter ReceiptHandle is invalid. Reason: %s", rh, reason))
}

// DeleteMessage deletes the message whose current receipt handle is given.
func (f *FIFO) DeleteMessage(_ context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.begin("DeleteMessage", aws.ToString(in.QueueUrl))
	if err != nil {
		return nil, err
	}
	if err := f.delete(q, aws.ToString(in.ReceiptHandle)); err != nil {
		f.errs["DeleteMessage"]++
		return nil, err
	}
	return &sqs.DeleteMessageOutput{}, nil
}

func (f *FIFO) delete(q *fifoQueue, rh string) error {
	now := time.Now()
	q.expire(now)
	m, err := q.handle("delete", rh, now)
	if err != nil {
		return err
	}
	if !m.deleted {
		m.deleted, m.deletedBy, m.receipt = true, rh, ""
		f.notify()
	}
	return nil
}

// DeleteMessageBatch deletes up to ten messages, reporting each entry.
func (f *FIFO) DeleteMessageBatch(_ context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.begin("DeleteMessageBatch", aws.ToString(in.QueueUrl))
	if err != nil {
		return nil, err
	}
	out := &sqs.DeleteMessageBatchOutput{}
	out.Failed, err = batch(f, "DeleteMessageBatch", in.Entries, func(e sqstypes.DeleteMessageBatchRequestEntry) *string { return e.Id }, nil,
		func(e sqstypes.DeleteMessageBatchRequestEntry) error {
			err := f.delete(q, aws.ToString(e.ReceiptHandle))
			if err == nil {
				out.Successful = append(out.Successful, sqstypes.DeleteMessageBatchResultEntry{Id: e.Id})
			}
			return err
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// maxVisibility is SQS's cap on a message's visibility from its receive.
const maxVisibility = 12 * time.Hour

// ChangeMessageVisibility sets an in-flight message's visibility timeout
// from now.
func (f *FIFO) ChangeMessageVisibility(_ context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.begin("ChangeMessageVisibility", aws.ToString(in.QueueUrl))
	if err != nil {
		return nil, err
	}
	if err := f.changeVisibility(q, aws.ToString(in.ReceiptHandle), in.VisibilityTimeout); err != nil {
		f.errs["ChangeMessageVisibility"]++
		return nil, err
	}
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

func (f *FIFO) changeVisibility(q *fifoQueue, rh string, secs int32) error {
	now := time.Now()
	q.expire(now)
	m, err := q.handle("visibility", rh, now)
	if err != nil {
		return err
	}
	d := time.Duration(secs) * time.Second
	if secs < 0 || now.Add(d).Sub(m.receivedAt) > maxVisibility {
		return apiError("InvalidParameterValue", fmt.Sprintf("Value %d for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [43200 seconds]", secs))
	}
	m.invisibleUntil = now.Add(d)
	if secs == 0 {
		m.receipt = ""
		f.notify()
	}
	return nil
}

// ChangeMessageVisibilityBatch changes up to ten messages' visibility,
// reporting each entry.
func (f *FIFO) ChangeMessageVisibilityBatch(_ context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.begin("ChangeMessageVisibilityBatch", aws.ToString(in.QueueUrl))
	if err != nil {
		return nil, err
	}
	out := &sqs.ChangeMessageVisibilityBatchOutput{}
	out.Failed, err = batch(f, "ChangeMessageVisibilityBatch", in.Entries, func(e sqstypes.ChangeMessageVisibilityBatchRequestEntry) *string { return e.Id }, nil,
		func(e sqstypes.ChangeMessageVisibilityBatchRequestEntry) error {
			err := f.changeVisibility(q, aws.ToString(e.ReceiptHandle), e.VisibilityTimeout)
			if err == nil {
				out.Successful = append(out.Successful, sqstypes.ChangeMessageVisibilityBatchResultEntry{Id: e.Id})
			}
			return err
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// validID reports whether s is a valid MessageGroupId or
// MessageDeduplicationId: 1-128 characters of a-z, A-Z, 0-9 and
// punctuation (!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~), per the SendMessage API
// reference.
func validID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < '!' || c > '~' {
			return false
		}
	}
	return true
}

// validEntryID reports whether s is a valid batch entry Id: 1-80
// characters of a-z, A-Z, 0-9, hyphen and underscore ("Amazon SQS message
// quotas", batched message ID).
func validEntryID(s string) bool {
	if s == "" || len(s) > 80 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func checkBatch(ids []string) error {
	switch {
	case len(ids) == 0:
		return &sqstypes.EmptyBatchRequest{Message: aws.String("There should be at least one entry in the request.")}
	case len(ids) > 10:
		return &sqstypes.TooManyEntriesInBatchRequest{Message: aws.String(fmt.Sprintf("Maximum number of entries per request are 10. You have sent %d.", len(ids)))}
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if !validEntryID(id) {
			return &sqstypes.InvalidBatchEntryId{Message: aws.String("A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.")}
		}
		if seen[id] {
			return &sqstypes.BatchEntryIdsNotDistinct{Message: aws.String("Id " + id + " repeated.")}
		}
		seen[id] = true
	}
	return nil
}

func batchError(id string, err error) sqstypes.BatchResultErrorEntry {
	code, msg, sender := "InternalError", err.Error(), true
	var api smithy.APIError
	if errors.As(err, &api) {
		code, msg, sender = api.ErrorCode(), api.ErrorMessage(), api.ErrorFault() != smithy.FaultServer
	}
	return sqstypes.BatchResultErrorEntry{Id: aws.String(id), Code: aws.String(code), Message: aws.String(msg), SenderFault: sender}
}

// batch runs a batch request as SQS does: the entry ids are checked
// (1-10, distinct), then check (nil: none) on the whole request, then do on
// each entry in order. An entry do fails is reported, not returned; it and
// a refused request count as errors of op.
func batch[E any](f *FIFO, op string, entries []E, id func(E) *string, check func() error, do func(E) error) ([]sqstypes.BatchResultErrorEntry, error) {
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = aws.ToString(id(e))
	}
	err := checkBatch(ids)
	if err == nil && check != nil {
		err = check()
	}
	if err != nil {
		f.errs[op]++
		return nil, err
	}
	var failed []sqstypes.BatchResultErrorEntry
	for i, e := range entries {
		if err := do(e); err != nil {
			f.errs[op]++
			failed = append(failed, batchError(ids[i], err))
		}
	}
	return failed, nil
}

// GetQueueAttributes answers QueueArn, FifoQueue, VisibilityTimeout,
// RedrivePolicy (main queue with a MaxReceiveCount),
// ApproximateNumberOfMessages and ApproximateNumberOfMessagesNotVisible.
func (f *FIFO) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.begin("GetQueueAttributes", aws.ToString(in.QueueUrl))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	q.expire(now)
	visible, inFlight := 0, 0
	for _, m := range q.all {
		switch {
		case m.deleted:
		case m.inFlight(now):
			inFlight++
		default:
			visible++
		}
	}
	attrs := map[string]string{
		"QueueArn":                              "arn:aws:sqs:us-east-1:000000000000:" + q.name,
		"FifoQueue":                             "true",
		"VisibilityTimeout":                     strconv.Itoa(int(f.visibility.Seconds())),
		"ApproximateNumberOfMessages":           strconv.Itoa(visible),
		"ApproximateNumberOfMessagesNotVisible": strconv.Itoa(inFlight),
	}
	if q == f.main && f.maxReceive > 0 {
		p, _ := json.Marshal(map[string]any{"deadLetterTargetArn": "arn:aws:sqs:us-east-1:000000000000:" + f.dlq.name, "maxReceiveCount": f.maxReceive})
		attrs["RedrivePolicy"] = string(p)
	}
	out := map[string]string{}
	all := false
	for _, n := range in.AttributeNames {
		if n == sqstypes.QueueAttributeNameAll {
			all = true
		}
	}
	for _, n := range in.AttributeNames {
		if v, ok := attrs[string(n)]; ok {
			out[string(n)] = v
		}
	}
	if all {
		out = attrs
	}
	return &sqs.GetQueueAttributesOutput{Attributes: out}, nil
}
