package worker

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

type attrsQueue struct {
	attrs map[string]string
	err   error
}

func (q attrsQueue) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{Attributes: q.attrs}, q.err
}

func TestQueueMaxReceiveCount(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name   string
		q      attrsQueue
		want   int
		wantOK bool
		err    error
	}{
		{"number, as AWS answers", attrsQueue{attrs: map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:x","maxReceiveCount":7}`}}, 7, true, nil},
		{"string, as CloudFormation writes it", attrsQueue{attrs: map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:x","maxReceiveCount":"4"}`}}, 4, true, nil},
		{"no policy", attrsQueue{attrs: map[string]string{}}, 0, false, nil},
		{"policy without a count", attrsQueue{attrs: map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:x"}`}}, 0, false, nil},
		{"call fails", attrsQueue{err: boom}, 0, false, boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, ok, err := QueueMaxReceiveCount(t.Context(), tc.q, "url")
			if n != tc.want || ok != tc.wantOK || !errors.Is(err, tc.err) {
				t.Errorf("QueueMaxReceiveCount = %d, %v, %v; want %d, %v, %v", n, ok, err, tc.want, tc.wantOK, tc.err)
			}
		})
	}
}
