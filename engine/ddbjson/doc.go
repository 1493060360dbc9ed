// Package ddbjson converts DynamoDB attribute values to and from DynamoDB
// JSON, the typed wire form ({"S":"x"}, {"N":"1"}, {"M":{...}}) that a
// DynamoDB Streams record carries and that an EventBridge Pipe forwards as a
// message body when its input template is <$.dynamodb.NewImage>.
//
// The AWS SDK for Go v2 converts between Go values and attribute values
// (feature/dynamodb/attributevalue) but does not expose its DynamoDB JSON
// codec, so this small one exists. It is exact: numbers stay decimal
// strings, binary values are standard base64, sets keep their order.
//
// # Caveats
//
// Unmarshal rejects a value with zero or more than one type key, and an
// unknown type key, instead of guessing.
package ddbjson
