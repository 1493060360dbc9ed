package awscalls

import (
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

const region = "eu-west-1"

func s(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }

// fixedIters hands out one known iterator.
type fixedIters map[string]string

func (f fixedIters) Stream(it string) (string, bool) { s, ok := f[it]; return s, ok }

// req is what a test expects of one Call: action, resource, context.
type req struct {
	action, resource string
	ctx              map[string][]string
}

func TestAuthorize(t *testing.T) {
	table := "arn:aws:dynamodb:eu-west-1:123456789012:table/"
	lk := func(v ...string) map[string][]string { return map[string][]string{KeyLeadingKeys: v} }
	tx := func(v string) map[string][]string {
		return map[string][]string{KeyLeadingKeys: {v}, KeyEnclosingOperation: {"TransactWriteItems"}}
	}
	iters := fixedIters{"it-1": "arn:aws:dynamodb:eu-west-1:123456789012:table/p-bowline-events/stream/2026-01-01T00:00:00.000"}
	tests := []struct {
		name, service, op string
		input             any
		want              []req
	}{
		{"get item: table and leading key", "DynamoDB", "GetItem",
			&dynamodb.GetItemInput{TableName: aws.String("p-bowline-inbox"), Key: map[string]ddbtypes.AttributeValue{"pk": s("IDEMP#e1#sub")}},
			[]req{{"dynamodb:GetItem", table + "p-bowline-inbox", lk("IDEMP#e1#sub")}}},
		{"put item: leading key from the item", "DynamoDB", "PutItem",
			&dynamodb.PutItemInput{TableName: aws.String("p-bowline-app"), Item: map[string]ddbtypes.AttributeValue{"pk": s("DEVICE#gw"), "sk": s("x"), "n": &ddbtypes.AttributeValueMemberN{Value: "1"}}},
			[]req{{"dynamodb:PutItem", table + "p-bowline-app", lk("DEVICE#gw")}}},
		{"query on an index: index ARN, key from the condition", "DynamoDB", "Query",
			&dynamodb.QueryInput{TableName: aws.String("p-bowline-app"), IndexName: aws.String("by-tenant"),
				KeyConditionExpression: aws.String("#k = :pk AND begins_with(sk, :sk)"), ExpressionAttributeNames: map[string]string{"#k": "pk"},
				ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": s("TENANT#t1"), ":sk": s("A")}},
			[]req{{"dynamodb:Query", table + "p-bowline-app/index/by-tenant", lk("TENANT#t1")}}},
		{"query whose condition names no partition key", "DynamoDB", "Query",
			&dynamodb.QueryInput{TableName: aws.String("t"), KeyConditionExpression: aws.String("other = :v"),
				ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":v": s("x")}},
			[]req{{"dynamodb:Query", table + "t", nil}}},
		{"scan: no leading key", "DynamoDB", "Scan", &dynamodb.ScanInput{TableName: aws.String("p-bowline-events")},
			[]req{{"dynamodb:Scan", table + "p-bowline-events", nil}}},
		{"transaction: one request per item, on its table", "DynamoDB", "TransactWriteItems",
			&dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
				{Update: &ddbtypes.Update{TableName: aws.String("p-bowline-events"), Key: map[string]ddbtypes.AttributeValue{"pk": s("TENANT#t#HEAD"), "sk": s("HEAD")}}},
				{Put: &ddbtypes.Put{TableName: aws.String("p-bowline-events"), Item: map[string]ddbtypes.AttributeValue{"pk": s("TENANT#t#EVENT")}}},
				{Delete: &ddbtypes.Delete{TableName: aws.String("p-bowline-inbox"), Key: map[string]ddbtypes.AttributeValue{"pk": s("X")}}},
				{ConditionCheck: &ddbtypes.ConditionCheck{TableName: aws.String("p-bowline-app"), Key: map[string]ddbtypes.AttributeValue{"pk": s("Y")}}},
			}},
			[]req{
				{"dynamodb:UpdateItem", table + "p-bowline-events", tx("TENANT#t#HEAD")},
				{"dynamodb:PutItem", table + "p-bowline-events", tx("TENANT#t#EVENT")},
				{"dynamodb:DeleteItem", table + "p-bowline-inbox", tx("X")},
				{"dynamodb:ConditionCheckItem", table + "p-bowline-app", tx("Y")},
			}},
		{"batch get: one request per table", "DynamoDB", "BatchGetItem",
			&dynamodb.BatchGetItemInput{RequestItems: map[string]ddbtypes.KeysAndAttributes{
				"p-bowline-inbox": {Keys: []map[string]ddbtypes.AttributeValue{{"pk": s("b")}, {"pk": s("a")}}},
				"p-bowline-app":   {Keys: []map[string]ddbtypes.AttributeValue{{"pk": s("c")}}},
			}},
			[]req{{"dynamodb:BatchGetItem", table + "p-bowline-app", lk("c")}, {"dynamodb:BatchGetItem", table + "p-bowline-inbox", lk("a", "b")}}},
		{"batch write: puts and deletes", "DynamoDB", "BatchWriteItem",
			&dynamodb.BatchWriteItemInput{RequestItems: map[string][]ddbtypes.WriteRequest{"t": {
				{PutRequest: &ddbtypes.PutRequest{Item: map[string]ddbtypes.AttributeValue{"pk": s("p")}}},
				{DeleteRequest: &ddbtypes.DeleteRequest{Key: map[string]ddbtypes.AttributeValue{"pk": s("d")}}},
			}}},
			[]req{{"dynamodb:BatchWriteItem", table + "t", lk("d", "p")}}},
		{"describe table by its field", "DynamoDB", "DescribeTable", &dynamodb.DescribeTableInput{TableName: aws.String("t")},
			[]req{{"dynamodb:DescribeTable", table + "t", nil}}},
		{"list tables: no resource", "DynamoDB", "ListTables", &dynamodb.ListTablesInput{}, []req{{"dynamodb:ListTables", "*", nil}}},
		{"stream ARN of an emulator rewritten", "DynamoDB Streams", "GetShardIterator",
			&dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String("arn:aws:dynamodb:ddblocal:000000000000:table/p-bowline-events/stream/2026-01-01T00:00:00.000")},
			[]req{{"dynamodb:GetShardIterator", table + "p-bowline-events/stream/2026-01-01T00:00:00.000", nil}}},
		{"stream records by iterator", "DynamoDB Streams", "GetRecords", &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String("it-1")},
			[]req{{"dynamodb:GetRecords", table + "p-bowline-events/stream/2026-01-01T00:00:00.000", nil}}},
		{"list streams: no resource", "DynamoDB Streams", "ListStreams", &dynamodbstreams.ListStreamsInput{TableName: aws.String("t")},
			[]req{{"dynamodb:ListStreams", "*", nil}}},
		{"queue URL of an emulator", "SQS", "ReceiveMessage", &sqs.ReceiveMessageInput{QueueUrl: aws.String("http://127.0.0.1:4566/000000000000/p-bowline-events.fifo")},
			[]req{{"sqs:ReceiveMessage", "arn:aws:sqs:eu-west-1:123456789012:p-bowline-events.fifo", nil}}},
		{"batch send is SendMessage", "SQS", "SendMessageBatch", &sqs.SendMessageBatchInput{QueueUrl: aws.String("https://sqs.eu-west-1.amazonaws.com/1/q-dlq.fifo")},
			[]req{{"sqs:SendMessage", "arn:aws:sqs:eu-west-1:123456789012:q-dlq.fifo", nil}}},
		{"queue by name", "SQS", "GetQueueUrl", &sqs.GetQueueUrlInput{QueueName: aws.String("q")},
			[]req{{"sqs:GetQueueUrl", "arn:aws:sqs:eu-west-1:123456789012:q", nil}}},
		{"list queues: no resource", "SQS", "ListQueues", &sqs.ListQueuesInput{}, []req{{"sqs:ListQueues", "*", nil}}},
		{"kinesis stream by name", "Kinesis", "PutRecords", &kinesis.PutRecordsInput{StreamName: aws.String("p-bowline-telemetry")},
			[]req{{"kinesis:PutRecords", "arn:aws:kinesis:eu-west-1:123456789012:stream/p-bowline-telemetry", nil}}},
		{"kinesis stream by an emulator's ARN", "Kinesis", "ListShards", &kinesis.ListShardsInput{StreamARN: aws.String("arn:aws:kinesis:us-east-1:000000000000:stream/s")},
			[]req{{"kinesis:ListShards", "arn:aws:kinesis:eu-west-1:123456789012:stream/s", nil}}},
	}
	for _, tc := range tests {
		got := Authorize(tc.service, tc.op, tc.input, region, iters)
		if len(got) != len(tc.want) {
			t.Errorf("%s: Authorize = %+v; want %d requests", tc.name, got, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			g := got[i]
			if g.Error != "" || g.Action != w.action || g.Resource != w.resource || !reflect.DeepEqual(g.Context, w.ctx) {
				t.Errorf("%s: request %d = %s on %s %v (error %q); want %s on %s %v", tc.name, i, g.Action, g.Resource, g.Context, g.Error, w.action, w.resource, w.ctx)
			}
			if g.Operation != tc.service+"."+tc.op {
				t.Errorf("%s: operation %q; want %q", tc.name, g.Operation, tc.service+"."+tc.op)
			}
		}
	}
}

// TestAuthorizeRefusesToGuess: a call whose resource cannot be computed is
// recorded with an error, never with a made-up resource.
func TestAuthorizeRefusesToGuess(t *testing.T) {
	for _, tc := range []struct {
		name, service, op string
		input             any
	}{
		{"unknown iterator", "DynamoDB Streams", "GetRecords", &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String("nope")}},
		{"kinesis page without a stream", "Kinesis", "ListShards", &kinesis.ListShardsInput{NextToken: aws.String("tok")}},
		{"partiql", "DynamoDB", "ExecuteStatement", &dynamodb.ExecuteStatementInput{Statement: aws.String("SELECT * FROM t")}},
		{"unknown service", "S3", "GetObject", struct{}{}},
		{"queue URL without a name", "SQS", "ReceiveMessage", &sqs.ReceiveMessageInput{QueueUrl: aws.String("http://127.0.0.1:1/")}},
	} {
		got := Authorize(tc.service, tc.op, tc.input, region, fixedIters{})
		if len(got) != 1 || got[0].Error == "" || got[0].Resource != "" {
			t.Errorf("%s: Authorize = %+v; want one request with an error and no resource", tc.name, got)
		}
	}
}
