package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/bowline-iot/bowline/deploy/cfn/iamtest"
	"github.com/bowline-iot/bowline/engine/enginetest"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/resources"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// `bowline redrive --event` moves an event queued behind another of its
// tenant in the DLQ, leaves the one before it in place, and, because it
// was also asked for an id that is not in the DLQ, exits 1 naming it.
// Every AWS call it makes is one the operator role allows.
func TestRedriveEventBehindAnotherAndMissingIDExitsOne(t *testing.T) {
	testkit.Long(t, "runs the bowline binary")
	iamtest.Record(t) // the calls redrive makes are checked against OperatorRole
	bin := bowlineBin(t)
	names := freshStack(t)
	ctx := enginetest.Ctx(t)
	sq := sqs.NewFromConfig(lstest.AWSConfig(t))
	dlq := url(ctx, t, sq, names.EventsDLQ())
	tn := tenant()
	first := enginetest.Envelope(t, tn, "com.payment_completed", 1, nil)
	second := enginetest.Envelope(t, tn, "com.payment_completed", 2, nil)
	for _, env := range []string{enginetest.Body(t, first), enginetest.Body(t, second)} {
		_, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(dlq), MessageBody: aws.String(env),
			MessageGroupId: aws.String(tn), MessageDeduplicationId: aws.String(randHex(8))})
		if err != nil {
			t.Fatal(err)
		}
	}
	const missing = "01NOSUCHEVENT0000000000000"
	cmd := exec.Command(bin, "redrive", "--event", second.ID, "--event", missing)
	cmd.Env = append(os.Environ(), resources.StackEnv+"="+names.Stack)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := testkit.RunChild(ctx, t, "bowline redrive", cmd)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("bowline redrive = %v; want exit 1\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), missing) || !strings.Contains(stdout.String(), "not found "+missing) {
		t.Errorf("bowline redrive stdout %q, stderr %q; want both to name %s", stdout.String(), stderr.String(), missing)
	}
	if !strings.Contains(stdout.String(), "moved "+second.ID) {
		t.Errorf("bowline redrive printed %q; want %q", stdout.String(), "moved "+second.ID)
	}
	back := enginetest.Drain(ctx, t, sq, url(ctx, t, sq, names.EventsQueue()), func(d []enginetest.Drained) bool { return len(d) == 1 })
	if !strings.Contains(back[0].Body, second.ID) {
		t.Errorf("events queue got %s; want event %s", back[0].Body, second.ID)
	}
	left := enginetest.Drain(ctx, t, sq, dlq, func(d []enginetest.Drained) bool { return len(d) == 1 })
	if !strings.Contains(left[0].Body, first.ID) {
		t.Errorf("DLQ holds %s; want event %s", left[0].Body, first.ID)
	}
	if n := enginetest.Depth(ctx, t, sq, dlq); n != 0 {
		t.Errorf("DLQ depth after draining = %d; want 0 (no copy left behind)", n)
	}
}
