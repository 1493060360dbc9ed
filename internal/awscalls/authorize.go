package awscalls

import (
	"fmt"
	"net/url"
	"path"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
)

// Account is the account id of every recorded ARN. The evaluator resolves
// the template's AWS::AccountId to the same value.
const Account = "123456789012"

// PartitionKey is the partition key attribute of every Bowline table
// (engine/attr.PK; internal/provision creates the tables with it): its
// values are the dynamodb:LeadingKeys of a request.
const PartitionKey = "pk"

// Condition keys the recorder fills in.
const (
	KeyLeadingKeys        = "dynamodb:LeadingKeys"
	KeyEnclosingOperation = "dynamodb:EnclosingOperation"
)

// Service IDs of the SDK clients (their ServiceID constants) and the IAM
// service prefix each one's actions use.
var iamPrefix = map[string]string{
	"DynamoDB":         "dynamodb",
	"DynamoDB Streams": "dynamodb",
	"SQS":              "sqs",
	"Kinesis":          "kinesis",
}

// Call is one IAM authorization request a process made: who (Part, on
// Stack), what (Action on Resource, with Context) and through which SDK
// operation. Its JSON form is one line of a recording.
type Call struct {
	// Part is the process part that made the call (cloud/app's labels:
	// ingest, worker, api, console, relay:events, redrive, ...).
	Part string `json:"part"`
	// Stack is the resource name prefix (BOWLINE_STACK) the part ran on.
	Stack string `json:"stack"`
	// Operation is the SDK's "<service id>.<operation>".
	Operation string `json:"operation"`
	// Action is the IAM action, "dynamodb:PutItem".
	Action string `json:"action"`
	// Resource is the ARN the action is authorized on, or "*".
	Resource string `json:"resource"`
	// Region is the region of the client that made the call.
	Region string `json:"region"`
	// Context holds the condition keys the recorder knows for the
	// request: dynamodb:LeadingKeys, dynamodb:EnclosingOperation.
	Context map[string][]string `json:"context,omitempty"`
	// Cached marks a request the process answered from its own cache
	// (a queue URL resolved by another part of `bowline dev`); each part
	// makes it itself when it runs alone.
	Cached bool `json:"cached,omitempty"`
	// Error says why no resource could be computed; the evaluator refuses
	// such a call.
	Error string `json:"error,omitempty"`
}

// key identifies a distinct request for de-duplication.
func (c Call) key() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%s|%s|%s|%s|%s|%t|%s", c.Part, c.Stack, c.Operation, c.Action, c.Resource, c.Region, c.Cached, c.Error)
	keys := make([]string, 0, len(c.Context))
	for k := range c.Context {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "|%s=%q", k, c.Context[k])
	}
	return b.String()
}

// Iterators remembers which stream handed out a shard iterator, so that
// GetRecords, which names only the iterator, can be attributed.
type Iterators interface {
	Stream(iterator string) (arn string, ok bool)
}

// Authorize turns one SDK call into the requests IAM evaluates for it.
// serviceID and operation are the SDK's (dynamodb.ServiceID, "GetItem"),
// input the operation's input struct, region the client's region.
func Authorize(serviceID, operation string, input any, region string, iters Iterators) []Call {
	prefix, ok := iamPrefix[serviceID]
	op := serviceID + "." + operation
	if !ok {
		return []Call{{Operation: op, Action: strings.ToLower(serviceID) + ":" + operation, Error: fmt.Sprintf("no IAM rule for service %q", serviceID)}}
	}
	a := arns{region: region}
	one := func(action, resource string, ctx map[string][]string) []Call {
		return []Call{{Operation: op, Action: prefix + ":" + action, Resource: resource, Context: ctx}}
	}
	fail := func(format string, args ...any) []Call {
		return []Call{{Operation: op, Action: prefix + ":" + operation, Error: fmt.Sprintf(format, args...)}}
	}
	switch in := input.(type) {
	// DynamoDB items: one request per table, with the leading keys.
	case *dynamodb.GetItemInput:
		return one("GetItem", a.table(deref(in.TableName)), leading(in.Key))
	case *dynamodb.PutItemInput:
		return one("PutItem", a.table(deref(in.TableName)), leading(in.Item))
	case *dynamodb.UpdateItemInput:
		return one("UpdateItem", a.table(deref(in.TableName)), leading(in.Key))
	case *dynamodb.DeleteItemInput:
		return one("DeleteItem", a.table(deref(in.TableName)), leading(in.Key))
	case *dynamodb.QueryInput:
		ctx := queryLeading(in)
		return one("Query", a.tableOrIndex(deref(in.TableName), deref(in.IndexName)), ctx)
	case *dynamodb.ScanInput:
		return one("Scan", a.tableOrIndex(deref(in.TableName), deref(in.IndexName)), nil)
	case *dynamodb.BatchGetItemInput:
		var out []Call
		for _, table := range sortedKeys(in.RequestItems) {
			out = append(out, one("BatchGetItem", a.table(table), leading(in.RequestItems[table].Keys...))...)
		}
		return out
	case *dynamodb.BatchWriteItemInput:
		var out []Call
		for _, table := range sortedKeys(in.RequestItems) {
			var items []map[string]ddbtypes.AttributeValue
			for _, w := range in.RequestItems[table] {
				switch {
				case w.PutRequest != nil:
					items = append(items, w.PutRequest.Item)
				case w.DeleteRequest != nil:
					items = append(items, w.DeleteRequest.Key)
				}
			}
			out = append(out, one("BatchWriteItem", a.table(table), leading(items...))...)
		}
		return out
	case *dynamodb.TransactWriteItemsInput:
		var out []Call
		for i, it := range in.TransactItems {
			var action, table string
			var key map[string]ddbtypes.AttributeValue
			switch {
			case it.Put != nil:
				action, table, key = "PutItem", deref(it.Put.TableName), it.Put.Item
			case it.Update != nil:
				action, table, key = "UpdateItem", deref(it.Update.TableName), it.Update.Key
			case it.Delete != nil:
				action, table, key = "DeleteItem", deref(it.Delete.TableName), it.Delete.Key
			case it.ConditionCheck != nil:
				action, table, key = "ConditionCheckItem", deref(it.ConditionCheck.TableName), it.ConditionCheck.Key
			default:
				return fail("TransactWriteItems item %d: no Put, Update, Delete or ConditionCheck", i)
			}
			ctx := leading(key)
			if ctx == nil {
				ctx = map[string][]string{}
			}
			ctx[KeyEnclosingOperation] = []string{"TransactWriteItems"}
			out = append(out, one(action, a.table(table), ctx)...)
		}
		return out
	case *dynamodb.TransactGetItemsInput:
		var out []Call
		for _, it := range in.TransactItems {
			if it.Get == nil {
				continue
			}
			ctx := leading(it.Get.Key)
			if ctx == nil {
				ctx = map[string][]string{}
			}
			ctx[KeyEnclosingOperation] = []string{"TransactGetItems"}
			out = append(out, one("GetItem", a.table(deref(it.Get.TableName)), ctx)...)
		}
		return out
	case *dynamodb.ListTablesInput:
		return one("ListTables", "*", nil)
	case *dynamodb.ExecuteStatementInput, *dynamodb.BatchExecuteStatementInput, *dynamodb.ExecuteTransactionInput:
		return fail("PartiQL statements are not mapped to PartiQL* actions")

	// DynamoDB Streams: the stream ARN, or the stream that handed out the
	// iterator.
	case *dynamodbstreams.DescribeStreamInput:
		return one("DescribeStream", a.normalize(deref(in.StreamArn)), nil)
	case *dynamodbstreams.GetShardIteratorInput:
		return one("GetShardIterator", a.normalize(deref(in.StreamArn)), nil)
	case *dynamodbstreams.GetRecordsInput:
		s, ok := iters.Stream(deref(in.ShardIterator))
		if !ok {
			return fail("GetRecords: shard iterator not handed out through a recorded client")
		}
		return one("GetRecords", s, nil)
	case *dynamodbstreams.ListStreamsInput:
		return one("ListStreams", "*", nil)

	// Kinesis.
	case *kinesis.GetRecordsInput:
		if in.StreamARN != nil {
			return one("GetRecords", a.normalize(*in.StreamARN), nil)
		}
		s, ok := iters.Stream(deref(in.ShardIterator))
		if !ok {
			return fail("GetRecords: shard iterator not handed out through a recorded client")
		}
		return one("GetRecords", s, nil)
	case *kinesis.ListStreamsInput:
		return one("ListStreams", "*", nil)
	}
	// The rest by their fields: a table, queue or stream named by the input.
	switch prefix {
	case "dynamodb":
		if arn := field(input, "ResourceArn"); arn != "" {
			return one(operation, a.normalize(arn), nil)
		}
		if t := field(input, "TableName"); t != "" {
			return one(operation, a.tableOrIndex(t, field(input, "IndexName")), nil)
		}
	case "sqs":
		// Batch calls are authorized as their single form.
		action := strings.TrimSuffix(operation, "Batch")
		if u := field(input, "QueueUrl"); u != "" {
			arn, err := a.queueURL(u)
			if err != nil {
				return fail("%v", err)
			}
			return one(action, arn, nil)
		}
		if n := field(input, "QueueName"); n != "" {
			return one(action, a.queue(n), nil)
		}
		if operation == "ListQueues" {
			return one(action, "*", nil)
		}
	case "kinesis":
		if arn := field(input, "StreamARN"); arn != "" {
			return one(operation, a.normalize(arn), nil)
		}
		if n := field(input, "StreamName"); n != "" {
			return one(operation, a.stream(n), nil)
		}
	}
	return fail("no rule computes the resource of %s", op)
}

// arns builds ARNs in one region of Account.
type arns struct{ region string }

func (a arns) table(name string) string {
	return "arn:aws:dynamodb:" + a.region + ":" + Account + ":table/" + name
}

func (a arns) tableOrIndex(table, index string) string {
	if index == "" {
		return a.table(table)
	}
	return a.table(table) + "/index/" + index
}

func (a arns) queue(name string) string {
	return "arn:aws:sqs:" + a.region + ":" + Account + ":" + name
}

// queueURL turns a queue URL (AWS's or an emulator's) into the queue's
// ARN: the queue name is the URL's last path segment.
func (a arns) queueURL(u string) (string, error) {
	p, err := url.Parse(u)
	if err != nil || p.Path == "" || strings.HasSuffix(p.Path, "/") {
		return "", fmt.Errorf("queue URL %q: no queue name in its path", u)
	}
	return a.queue(path.Base(p.Path)), nil
}

func (a arns) stream(name string) string {
	return "arn:aws:kinesis:" + a.region + ":" + Account + ":stream/" + name
}

// normalize rewrites an ARN an emulator returned (its own region and
// account, "ddblocal", "000000000000") into this region and Account,
// keeping the service and resource.
func (a arns) normalize(arn string) string {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" {
		return arn
	}
	parts[1], parts[3], parts[4] = "aws", a.region, Account
	return strings.Join(parts, ":")
}

// leading returns the dynamodb:LeadingKeys context of items (their
// PartitionKey values), nil when none has one.
func leading(items ...map[string]ddbtypes.AttributeValue) map[string][]string {
	var keys []string
	seen := map[string]bool{}
	for _, it := range items {
		if v, ok := scalar(it[PartitionKey]); ok && !seen[v] {
			seen[v] = true
			keys = append(keys, v)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	sort.Strings(keys)
	return map[string][]string{KeyLeadingKeys: keys}
}

// equality matches "name = :value" terms of a key condition.
var equality = regexp.MustCompile(`(#?[A-Za-z0-9_]+)\s*=\s*(:[A-Za-z0-9_]+)`)

// queryLeading reads the partition key value of a Query from its key
// condition.
func queryLeading(in *dynamodb.QueryInput) map[string][]string {
	for _, m := range equality.FindAllStringSubmatch(deref(in.KeyConditionExpression), -1) {
		name := m[1]
		if strings.HasPrefix(name, "#") {
			name = in.ExpressionAttributeNames[name]
		}
		if name != PartitionKey {
			continue
		}
		if v, ok := scalar(in.ExpressionAttributeValues[m[2]]); ok {
			return map[string][]string{KeyLeadingKeys: {v}}
		}
	}
	return nil
}

func scalar(v ddbtypes.AttributeValue) (string, bool) {
	switch x := v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return x.Value, true
	case *ddbtypes.AttributeValueMemberN:
		return x.Value, true
	}
	return "", false
}

// field returns the string (or *string) field name of the struct input
// points to, "" when it has none.
func field(input any, name string) string {
	v := reflect.ValueOf(input)
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return ""
	}
	f := v.FieldByName(name)
	switch {
	case !f.IsValid():
		return ""
	case f.Kind() == reflect.String:
		return f.String()
	case f.Kind() == reflect.Pointer && !f.IsNil() && f.Elem().Kind() == reflect.String:
		return f.Elem().String()
	}
	return ""
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
