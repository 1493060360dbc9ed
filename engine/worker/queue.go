package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// QueueAttributesAPI reads a queue's attributes (*sqs.Client does).
type QueueAttributesAPI interface {
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// QueueMaxReceiveCount reads the maxReceiveCount of the queue's
// RedrivePolicy, the value Config.MaxReceiveCount must match: SQS moves a
// message to the dead-letter queue when its receive count would exceed it.
// ok is false when the queue has no redrive policy or its policy names no
// count; the caller then chooses a fallback.
func QueueMaxReceiveCount(ctx context.Context, q QueueAttributesAPI, url string) (n int, ok bool, err error) {
	out, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameRedrivePolicy},
	})
	if err != nil {
		return 0, false, fmt.Errorf("read redrive policy of queue %s: %w", url, err)
	}
	raw, found := out.Attributes[string(sqstypes.QueueAttributeNameRedrivePolicy)]
	if !found || raw == "" {
		return 0, false, nil
	}
	// maxReceiveCount is a number in AWS's answer and a string in some
	// emulators' (and in the CloudFormation template's JSON).
	var policy struct {
		MaxReceiveCount json.RawMessage `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(raw), &policy); err != nil {
		return 0, false, fmt.Errorf("redrive policy of queue %s: %w", url, err)
	}
	s := string(policy.MaxReceiveCount)
	if uq, err := strconv.Unquote(s); err == nil {
		s = uq
	}
	n, err = strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, false, nil
	}
	return n, true, nil
}
