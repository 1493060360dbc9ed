package chaos

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestThrottleAnswersAsDynamoDBDoes: while on, the throttle proxy's answer
// is what DynamoDB sends when it throttles (HTTP 400, the error type in
// "__type"), so the SDK decodes ProvisionedThroughputExceededException and
// its retryer treats it as throttling; off, requests pass through.
func TestThrottleAnswersAsDynamoDBDoes(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(`{"TableNames":["t"]}`))
	}))
	defer upstream.Close()
	n := newNetwork()
	defer n.close()
	u, err := n.throttleProxy("dynamodb", upstream.URL, "ProvisionedThroughputExceededException", "throttled (test)")
	if err != nil {
		t.Fatal(err)
	}
	n.thr["dynamodb"].rng = nil // every request while on
	c := dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(u), RetryMaxAttempts: 1,
		Credentials: aws.AnonymousCredentials{},
	})
	ctx := context.Background()
	n.thr["dynamodb"].set(true)
	_, err = c.ListTables(ctx, &dynamodb.ListTablesInput{})
	var pte *types.ProvisionedThroughputExceededException
	if !errors.As(err, &pte) {
		t.Fatalf("ListTables while throttled = %v; want ProvisionedThroughputExceededException", err)
	}
	n.thr["dynamodb"].set(false)
	out, err := c.ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil || len(out.TableNames) != 1 {
		t.Fatalf("ListTables after the throttle = %v, %v; want the upstream's answer", out, err)
	}
}
