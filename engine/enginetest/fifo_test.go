package enginetest_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/bowline-iot/bowline/engine/enginetest"
)

func send(t *testing.T, q *enginetest.FIFO, group string, n int) {
	t.Helper()
	for i := range n {
		_, err := q.SendMessage(t.Context(), &sqs.SendMessageInput{
			QueueUrl: aws.String(q.URL), MessageBody: aws.String(fmt.Sprintf("%s-%d", group, i+1)),
			MessageGroupId: aws.String(group), MessageDeduplicationId: aws.String(fmt.Sprintf("%s-%d", group, i+1)),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func receive(t *testing.T, q *enginetest.FIFO, url string, max int32, wait int32) []sqstypes.Message {
	t.Helper()
	out, err := q.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), MaxNumberOfMessages: max, WaitTimeSeconds: wait,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Messages
}

func bodies(ms []sqstypes.Message) string {
	var s []string
	for _, m := range ms {
		s = append(s, aws.ToString(m.Body))
	}
	return fmt.Sprint(s)
}

func code(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return fmt.Sprint(err)
}

// A receive hands out up to ten messages of one group, in order; the
// group stays locked while any of them is in flight; other groups fill the
// rest of a batch.
func TestFIFOReceivesUpToTenOfOneGroupInOrder(t *testing.T) {
	q := enginetest.NewFIFO(enginetest.FIFOConfig{Visibility: 30 * time.Second})
	send(t, q, "a", 12)
	send(t, q, "b", 3)
	first := receive(t, q, q.URL, 10, 0)
	if got, want := bodies(first), "[a-1 a-2 a-3 a-4 a-5 a-6 a-7 a-8 a-9 a-10]"; got != want {
		t.Fatalf("first receive = %s; want %s", got, want)
	}
	if got, want := bodies(receive(t, q, q.URL, 10, 0)), "[b-1 b-2 b-3]"; got != want {
		t.Fatalf("second receive = %s; want %s (group a locked while in flight)", got, want)
	}
	if got := receive(t, q, q.URL, 10, 0); len(got) != 0 {
		t.Fatalf("third receive = %s; want nothing (both groups locked)", bodies(got))
	}
	// Deleting all but one of a's in-flight messages keeps a locked.
	in := &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(q.URL)}
	for i, m := range first[:9] {
		in.Entries = append(in.Entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
	}
	if out, err := q.DeleteMessageBatch(t.Context(), in); err != nil || len(out.Failed) != 0 {
		t.Fatalf("DeleteMessageBatch = %v, %+v; want all deleted", err, out)
	}
	if got := receive(t, q, q.URL, 10, 0); len(got) != 0 {
		t.Fatalf("receive with a-10 in flight = %s; want nothing", bodies(got))
	}
	if _, err := q.DeleteMessageBatch(t.Context(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(q.URL), Entries: []sqstypes.DeleteMessageBatchRequestEntry{{Id: aws.String("0"), ReceiptHandle: first[9].ReceiptHandle}}}); err != nil {
		t.Fatal(err)
	}
	mixed := receive(t, q, q.URL, 10, 0)
	if got, want := bodies(mixed), "[a-11 a-12]"; got != want {
		t.Fatalf("receive after a's deletes = %s; want %s", got, want)
	}
	if c := mixed[0].Attributes["ApproximateReceiveCount"]; c != "1" {
		t.Errorf("ApproximateReceiveCount = %s; want 1", c)
	}
}

// A message whose visibility expires is received again with its count
// incremented and a new handle; the old handle is refused for a delete
// and a visibility change, as SQS does for FIFO queues.
func TestFIFOExpiredVisibilityRedeliversAndStalesTheHandle(t *testing.T) {
	q := enginetest.NewFIFO(enginetest.FIFOConfig{Visibility: time.Second})
	send(t, q, "a", 2)
	first := receive(t, q, q.URL, 1, 0)
	if len(first) != 1 {
		t.Fatalf("receive = %d messages; want 1", len(first))
	}
	// After the visibility timeout the message is visible again; between
	// the expiry and the next receive its handle is refused.
	var again []sqstypes.Message
	for deadline := time.Now().Add(10 * time.Second); len(again) == 0 && time.Now().Before(deadline); {
		again = receive(t, q, q.URL, 10, 2)
	}
	if len(again) != 2 || aws.ToString(again[0].MessageId) != aws.ToString(first[0].MessageId) {
		t.Fatalf("receive after expiry = %s; want a-1 again, then a-2", bodies(again))
	}
	if c := again[0].Attributes["ApproximateReceiveCount"]; c != "2" {
		t.Errorf("ApproximateReceiveCount after expiry = %s; want 2", c)
	}
	if aws.ToString(again[0].ReceiptHandle) == aws.ToString(first[0].ReceiptHandle) {
		t.Error("receive after expiry gave the old receipt handle; want a new one")
	}
	_, err := q.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: first[0].ReceiptHandle})
	if code(err) != "InvalidParameterValue" {
		t.Errorf("DeleteMessage(stale handle) = %v; want InvalidParameterValue (the receipt handle has expired)", err)
	}
	_, err = q.ChangeMessageVisibility(t.Context(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(q.URL), ReceiptHandle: first[0].ReceiptHandle, VisibilityTimeout: 30})
	if code(err) != "InvalidParameterValue" {
		t.Errorf("ChangeMessageVisibility(stale handle) = %v; want InvalidParameterValue (the receipt handle has expired)", err)
	}
	if _, err := q.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: again[0].ReceiptHandle}); err != nil {
		t.Errorf("DeleteMessage(current handle) = %v; want nil", err)
	}
	if n := q.Errors("DeleteMessage"); n != 1 {
		t.Errorf("DeleteMessage errors = %d; want 1", n)
	}
}

// A handle whose visibility ran out, before any new receive, is refused:
// on a FIFO queue the receipt handle has expired.
func TestFIFOVisibilityChangeOnALapsedMessage(t *testing.T) {
	q := enginetest.NewFIFO(enginetest.FIFOConfig{Visibility: time.Second})
	send(t, q, "a", 1)
	m := receive(t, q, q.URL, 1, 0)[0]
	_, err := q.ChangeMessageVisibility(t.Context(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(q.URL), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})
	if err != nil {
		t.Fatalf("ChangeMessageVisibility(0) = %v; want nil", err)
	}
	_, err = q.ChangeMessageVisibility(t.Context(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(q.URL), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 30})
	if code(err) != "InvalidParameterValue" {
		t.Errorf("ChangeMessageVisibility after it became visible = %v; want InvalidParameterValue (the receipt handle has expired)", err)
	}
	_, err = q.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: m.ReceiptHandle})
	if code(err) != "InvalidParameterValue" {
		t.Errorf("DeleteMessage after it became visible = %v; want InvalidParameterValue (the receipt handle has expired)", err)
	}
	// Beyond 12 hours from the receive is refused.
	m = receive(t, q, q.URL, 1, 0)[0]
	_, err = q.ChangeMessageVisibility(t.Context(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(q.URL), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 43201})
	if code(err) != "InvalidParameterValue" {
		t.Errorf("ChangeMessageVisibility(43201) = %v; want InvalidParameterValue", err)
	}
}

// A message received maxReceiveCount times is moved to the DLQ by the next
// receive, with its id, body and group.
func TestFIFORedrivesAfterMaxReceiveCount(t *testing.T) {
	q := enginetest.NewFIFO(enginetest.FIFOConfig{Visibility: 30 * time.Second, MaxReceiveCount: 2})
	send(t, q, "a", 2)
	var id string
	for range 2 {
		m := receive(t, q, q.URL, 1, 0)[0]
		id = aws.ToString(m.MessageId)
		if _, err := q.ChangeMessageVisibility(t.Context(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(q.URL), ReceiptHandle: m.ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := bodies(receive(t, q, q.URL, 10, 0)), "[a-2]"; got != want {
		t.Fatalf("third receive = %s; want %s (a-1 moved to the DLQ)", got, want)
	}
	dlq := receive(t, q, q.DLQURL, 10, 0)
	if len(dlq) != 1 || aws.ToString(dlq[0].MessageId) != id || dlq[0].Attributes["MessageGroupId"] != "a" || aws.ToString(dlq[0].Body) != "a-1" {
		t.Errorf("DLQ = %+v; want a-1 (id %s, group a)", dlq, id)
	}
	attrs, err := q.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q.URL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameRedrivePolicy}})
	if err != nil || attrs.Attributes["RedrivePolicy"] == "" {
		t.Errorf("RedrivePolicy = %v, %v; want the policy", attrs, err)
	}
}

// Batch calls take 1-10 entries with distinct ids and report each entry.
func TestFIFOBatchRules(t *testing.T) {
	q := enginetest.NewFIFO(enginetest.FIFOConfig{})
	send(t, q, "a", 2)
	ms := receive(t, q, q.URL, 10, 0)
	var eleven []sqstypes.DeleteMessageBatchRequestEntry
	for i := range 11 {
		eleven = append(eleven, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: ms[0].ReceiptHandle})
	}
	for _, tc := range []struct {
		entries []sqstypes.DeleteMessageBatchRequestEntry
		want    string
	}{
		{nil, "AWS.SimpleQueueService.EmptyBatchRequest"},
		{eleven, "AWS.SimpleQueueService.TooManyEntriesInBatchRequest"},
		{[]sqstypes.DeleteMessageBatchRequestEntry{{Id: aws.String("x"), ReceiptHandle: ms[0].ReceiptHandle}, {Id: aws.String("x"), ReceiptHandle: ms[1].ReceiptHandle}}, "AWS.SimpleQueueService.BatchEntryIdsNotDistinct"},
	} {
		_, err := q.DeleteMessageBatch(t.Context(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(q.URL), Entries: tc.entries})
		if c := code(err); c != tc.want && "AWS.SimpleQueueService."+c != tc.want {
			t.Errorf("DeleteMessageBatch(%d entries) = %v; want %s", len(tc.entries), err, tc.want)
		}
	}
	out, err := q.DeleteMessageBatch(t.Context(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(q.URL), Entries: []sqstypes.DeleteMessageBatchRequestEntry{
		{Id: aws.String("ok"), ReceiptHandle: ms[0].ReceiptHandle}, {Id: aws.String("bad"), ReceiptHandle: aws.String("nope")},
	}})
	if err != nil || len(out.Successful) != 1 || len(out.Failed) != 1 || aws.ToString(out.Failed[0].Id) != "bad" || !out.Failed[0].SenderFault {
		t.Errorf("DeleteMessageBatch(one good, one bad) = %+v, %v; want one success and one sender fault", out, err)
	}
}

// A deduplication id seen in the last five minutes is accepted and not
// enqueued again.
func TestFIFODeduplicates(t *testing.T) {
	q := enginetest.NewFIFO(enginetest.FIFOConfig{})
	send(t, q, "a", 1)
	send(t, q, "a", 1)
	if n := len(q.Messages(q.URL)); n != 1 {
		t.Errorf("messages after sending one twice = %d; want 1", n)
	}
	if _, err := q.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String("x"), MessageDeduplicationId: aws.String("d")}); code(err) != "MissingParameter" {
		t.Errorf("SendMessage without a group = %v; want MissingParameter", err)
	}
}

// A long poll returns as soon as a message arrives.
func TestFIFOLongPollWakesOnSend(t *testing.T) {
	q := enginetest.NewFIFO(enginetest.FIFOConfig{})
	got := make(chan []sqstypes.Message, 1)
	go func() {
		out, _ := q.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 20})
		got <- out.Messages
	}()
	for q.Calls("ReceiveMessage") == 0 {
		time.Sleep(time.Millisecond)
	}
	send(t, q, "a", 1)
	select {
	case ms := <-got:
		if len(ms) != 1 {
			t.Errorf("long poll returned %d messages; want 1", len(ms))
		}
	case <-time.After(15 * time.Second):
		t.Fatal("long poll did not return after a send")
	}
}

// TestFIFOEnforcesSQSContentRules: the double refuses what SQS refuses and
// fauxqs accepts: a body character outside SQS's set (InvalidMessageContents,
// the entry alone), a batch whose bodies exceed 262,144 bytes together
// (BatchRequestTooLong, the whole call) and a group id with a space. An
// injected failure fails one entry as a server fault and enqueues the rest.
func TestFIFOEnforcesSQSContentRules(t *testing.T) {
	q := enginetest.NewFIFO(enginetest.FIFOConfig{})
	entry := func(id, body, group string) sqstypes.SendMessageBatchRequestEntry {
		return sqstypes.SendMessageBatchRequestEntry{Id: aws.String(id), MessageBody: aws.String(body), MessageGroupId: aws.String(group), MessageDeduplicationId: aws.String(id)}
	}
	q.InjectSendFailure("inj", 1)
	out, err := q.SendMessageBatch(t.Context(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.URL), Entries: []sqstypes.SendMessageBatchRequestEntry{
		entry("ok", `{"a":"\ufffe escaped"}`, "g"), entry("raw", "{\"a\":\"\uFFFE\"}", "g"), entry("ffff", "x\uFFFFy", "g"),
		entry("ctl", "a\x01b", "g"), entry("space", "b", "g 1"), entry("inj", "c", "g"), entry("astral", "\U0001F600", "g"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	failed := map[string]sqstypes.BatchResultErrorEntry{}
	for _, f := range out.Failed {
		failed[aws.ToString(f.Id)] = f
	}
	for id, want := range map[string]string{"raw": "InvalidMessageContents", "ffff": "InvalidMessageContents", "ctl": "InvalidMessageContents", "space": "InvalidParameterValue", "inj": "InternalError"} {
		f, ok := failed[id]
		if !ok || aws.ToString(f.Code) != want || f.SenderFault != (id != "inj") {
			t.Errorf("entry %s failed = %v (%s, sender fault %v); want %s", id, ok, aws.ToString(f.Code), f.SenderFault, want)
		}
	}
	if len(out.Successful) != 2 {
		t.Errorf("accepted %d entries; want 2 (ok, astral)", len(out.Successful))
	}
	big := strings.Repeat("x", 100000)
	_, err = q.SendMessageBatch(t.Context(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.URL), Entries: []sqstypes.SendMessageBatchRequestEntry{
		entry("b1", big, "g"), entry("b2", big, "h"), entry("b3", big, "i"),
	}})
	var tooLong *sqstypes.BatchRequestTooLong
	if !errors.As(err, &tooLong) {
		t.Errorf("batch of 300,000 bytes: err = %v; want BatchRequestTooLong", err)
	}
}
