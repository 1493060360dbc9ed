package seedinbox

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Redrive is the article's runbook step "move the DLQ back to its source
// queue": every message in dlqURL is sent to queueURL (same body and
// group, a fresh deduplication id, since FIFO drops a repeated id for five
// minutes) and deleted from the DLQ. It touches no claim. It returns the
// ids of the messages it moved, in order, and stops when a receive comes
// back empty.
func Redrive(ctx context.Context, q QueueAPI, dlqURL, queueURL string) ([]string, error) {
	var moved []string
	for {
		out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(dlqURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameMessageGroupId},
		})
		if err != nil {
			return moved, fmt.Errorf("seed redrive: receive from %s: %w", dlqURL, err)
		}
		if len(out.Messages) == 0 {
			return moved, nil
		}
		for _, m := range out.Messages {
			id := aws.ToString(m.MessageId)
			_, err := q.SendMessage(ctx, &sqs.SendMessageInput{
				QueueUrl: aws.String(queueURL), MessageBody: m.Body,
				MessageGroupId:         aws.String(m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)]),
				MessageDeduplicationId: aws.String("redrive-" + id),
			})
			if err != nil {
				return moved, fmt.Errorf("seed redrive: send %s to %s: %w", id, queueURL, err)
			}
			if _, err := q.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(dlqURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				return moved, fmt.Errorf("seed redrive: delete %s from %s: %w", id, dlqURL, err)
			}
			moved = append(moved, id)
		}
	}
}
