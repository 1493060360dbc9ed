// Package awscalls records every AWS API call a Bowline process makes, as
// the IAM authorization requests AWS would evaluate for it: the part of the
// process that made it, the IAM action, the resource ARN and the condition
// keys Bowline's policies use. deploy/cfn evaluates a recording against the
// roles of the CloudFormation template (docs/iam.md).
//
// Recording is off unless BOWLINE_RECORD_CALLS names a file. Each process
// appends one JSON line per distinct request (Call), with one write(2) per
// line, so several processes can share the file and a killed process
// loses nothing it recorded.
//
// A call becomes one request per resource it touches, as IAM authorizes it:
// TransactWriteItems becomes a PutItem, UpdateItem, DeleteItem or
// ConditionCheckItem per item on that item's table (with
// dynamodb:EnclosingOperation), BatchGetItem and BatchWriteItem one request
// per table, SQS batch calls the action of their single form. ARNs use the
// region of the client and the fixed account Account (the evaluator
// resolves the template's AWS::AccountId to the same); an emulator's own
// ARNs (stream ARNs, Kinesis stream ARNs) are rewritten to them. A call that
// names no resource (ListTables, ListQueues, ListStreams) records "*".
//
// Usage (usage.go, capacity.go) is the other recording: it counts every
// call, not each distinct request, with what AWS bills for it (DynamoDB
// request units by table and partition key, Kinesis records and PUT
// payload units, SQS requests in 64 KB chunks, AWS IoT HTTPS publishes in
// 5 KB units) for ./scripts/bench cost (docs/cost.md).
//
// # Caveats
//
// DynamoDB Streams and Kinesis GetRecords name only a shard iterator; the
// stream comes from the GetShardIterator or GetRecords answer that handed
// out that iterator through a recorded client. dynamodb:LeadingKeys is the
// value of the partition key attribute PartitionKey (every Bowline table's);
// for Query it is read from KeyConditionExpression ("pk = :v"). An
// operation the package has no rule for is recorded with Error set, and the
// evaluator refuses it rather than guess.
package awscalls
