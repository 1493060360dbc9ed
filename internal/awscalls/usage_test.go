package awscalls

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func TestItemSize(t *testing.T) {
	for _, tc := range []struct {
		item map[string]ddbtypes.AttributeValue
		want int
	}{
		{map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "GW#gw-1"}}, 2 + 7},
		{map[string]ddbtypes.AttributeValue{"n": &ddbtypes.AttributeValueMemberN{Value: "12345"}}, 1 + 4},
		{map[string]ddbtypes.AttributeValue{"b": &ddbtypes.AttributeValueMemberBOOL{Value: true}}, 2},
		{map[string]ddbtypes.AttributeValue{"l": &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{
			&ddbtypes.AttributeValueMemberS{Value: "ab"}, &ddbtypes.AttributeValueMemberNULL{Value: true}}}}, 1 + 3 + 3 + 2},
	} {
		if got := ItemSize(tc.item); got != tc.want {
			t.Errorf("ItemSize(%v) = %d; want %d", tc.item, got, tc.want)
		}
	}
}

// TestUsageCountsBilledUnits runs real clients over canned answers: every
// call is counted (the IAM recording keeps distinct ones only); DynamoDB
// units come from the reported ConsumedCapacity when there is one and
// from the item sizes when not; Kinesis counts accepted records and their
// 25 KB units; SQS counts 64 KB chunks, FIFO apart.
func TestUsageCountsBilledUnits(t *testing.T) {
	ctx := context.Background()
	u := NewUsage()
	cfg := u.Config(testConfig(canned{
		"PutItem":    `{}`,
		"UpdateItem": `{"ConsumedCapacity":{"TableName":"t","CapacityUnits":3}}`,
		// What DynamoDB Local answers for a transaction of any size.
		"TransactWriteItems": `{"ConsumedCapacity":[{"TableName":"x","CapacityUnits":4,"WriteCapacityUnits":4}]}`,
		"Query":              `{"Items":[{"pk":{"S":"GW#a"},"v":{"S":"` + strings.Repeat("x", 5000) + `"}}],"Count":1}`,
		"PutRecords":         `{"FailedRecordCount":1,"Records":[{"SequenceNumber":"1","ShardId":"s"},{"ErrorCode":"ProvisionedThroughputExceededException"},{"SequenceNumber":"2","ShardId":"s"}]}`,
		"SendMessageBatch":   `{"Successful":[],"Failed":[]}`,
	}))
	ddb := dynamodb.NewFromConfig(cfg)
	item := map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "GW#a"}, "v": &ddbtypes.AttributeValueMemberS{Value: strings.Repeat("y", 1500)}}
	for range 2 {
		if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	up := &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "GW#a"}}}
	if _, err := ddb.UpdateItem(ctx, up); err != nil {
		t.Fatal(err)
	}
	if up.ReturnConsumedCapacity != ddbtypes.ReturnConsumedCapacityTotal {
		t.Errorf("UpdateItem sent with ReturnConsumedCapacity %q; want TOTAL", up.ReturnConsumedCapacity)
	}
	if _, err := ddb.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("r"), KeyConditionExpression: aws.String("pk = :v"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":v": &ddbtypes.AttributeValueMemberS{Value: "GW#a"}}}); err != nil {
		t.Fatal(err)
	}

	kin := kinesis.NewFromConfig(cfg)
	big := make([]byte, 30*1024)
	if _, err := kin.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String("s"), Records: []ktypes.PutRecordsRequestEntry{
		{Data: big, PartitionKey: aws.String("gw")}, {Data: []byte("lost"), PartitionKey: aws.String("gw")}, {Data: []byte("abc"), PartitionKey: aws.String("gw")},
	}}); err != nil {
		t.Fatal(err)
	}

	q := sqs.NewFromConfig(cfg)
	body := strings.Repeat("z", 35*1024)
	if _, err := q.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String("http://127.0.0.1:9/000000000000/q.fifo"),
		Entries: []sqstypes.SendMessageBatchRequestEntry{{Id: aws.String("1"), MessageBody: &body}, {Id: aws.String("2"), MessageBody: &body}}}); err != nil {
		t.Fatal(err)
	}

	// A transaction is sized, 2 units per KB of each item, whatever the
	// response reports: one small put is 2 units, three are 6 (one of
	// 1,506 bytes: 4).
	small := map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "EMIT#a"}}
	for _, items := range [][]map[string]ddbtypes.AttributeValue{{small}, {small, small, item}} {
		var tx []ddbtypes.TransactWriteItem
		for _, it := range items {
			tx = append(tx, ddbtypes.TransactWriteItem{Put: &ddbtypes.Put{TableName: aws.String("x"), Item: it}})
		}
		if _, err := ddb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: tx}); err != nil {
			t.Fatal(err)
		}
	}
	if got := u.Counts().WRU["x"]; got != 2+(2+2+4) {
		t.Errorf("transactions' WRU = %g; want 10 (sized, not the reported 4 each)", got)
	}

	c := u.Counts()
	if c.Calls["DynamoDB.PutItem"] != 2 || c.Calls["Kinesis.PutRecords"] != 1 {
		t.Errorf("calls = %v; want 2 PutItem and 1 PutRecords", c.Calls)
	}
	// 2 PutItem of 1,506 bytes sized (2 WRU each), 1 UpdateItem reported (3).
	if c.WRU["t"] != 2*2+3 || c.CapacitySized != 5 || c.CapacityReported != 1 {
		t.Errorf("WRU = %v, sized %d, reported %d; want t: 7, 5 sized (2 puts, 2 transactions, 1 query), 1 reported", c.WRU, c.CapacitySized, c.CapacityReported)
	}
	if c.MaxKeyWRU != 7 {
		t.Errorf("busiest key WRU = %g; want 7 (every write is GW#a)", c.MaxKeyWRU)
	}
	// Query of 5,008 bytes, eventually consistent: 2 units / 2.
	if c.RRU["r"] != 1 || c.MaxKeyRRU != 1 {
		t.Errorf("RRU = %v, busiest key %g; want r: 1, 1", c.RRU, c.MaxKeyRRU)
	}
	if c.KinesisRecords != 2 || c.KinesisPutUnits != 2+1 || c.KinesisBytes != int64(len(big)+2+3+2) {
		t.Errorf("kinesis records, units, bytes = %d, %d, %d; want 2, 3, %d (the failed record is not counted)", c.KinesisRecords, c.KinesisPutUnits, c.KinesisBytes, len(big)+7)
	}
	if c.KinesisBilledBytes != 31*1024+1024 {
		t.Errorf("kinesis billed bytes = %d; want %d", c.KinesisBilledBytes, 32*1024)
	}
	if c.SQSFIFORequests != 2 || c.SQSRequests != 0 {
		t.Errorf("SQS requests standard, FIFO = %d, %d; want 0, 2 (70 KB is two 64 KB chunks)", c.SQSRequests, c.SQSFIFORequests)
	}
	var nilUsage *Usage
	if got := nilUsage.Config(cfg); len(got.APIOptions) != len(cfg.APIOptions) {
		t.Errorf("nil Usage changed the config")
	}
}

func TestUsageCountsSince(t *testing.T) {
	before := UsageCounts{Calls: map[string]int64{"Kinesis.PutRecords": 2}, WRU: map[string]float64{"t": 3}, KinesisRecords: 10, SQSRequests: 1}
	after := UsageCounts{Calls: map[string]int64{"Kinesis.PutRecords": 5}, WRU: map[string]float64{"t": 5, "u": 1}, KinesisRecords: 40, SQSRequests: 4, MaxKeyWRU: 2}
	d := after.Since(before)
	if d.Calls["Kinesis.PutRecords"] != 3 || d.WRU["t"] != 2 || d.WRU["u"] != 1 || d.KinesisRecords != 30 || d.SQSRequests != 3 || d.MaxKeyWRU != 2 {
		t.Errorf("since = %+v; want 3 calls, WRU t:2 u:1, 30 records, 3 SQS requests, busiest key kept", d)
	}
	if before.WRU["t"] != 3 {
		t.Errorf("Since changed its argument's map")
	}
}
