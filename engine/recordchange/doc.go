// Package recordchange is the BEST_EFFORT lane's dispatcher: it long-polls
// the record-changes queue, which the record-changes pipe feeds with whole
// DynamoDB Streams records of the app table, turns each record into a
// row-change envelope of type row.<entity>.<insert|modify|remove>, and runs
// the matching BEST_EFFORT subscriptions.
//
// The entity is the row's "entity" attribute when it has one, otherwise the
// first segment of its partition key, lowercased ("ORDER#o1" is an order).
// The tenant is the row's "tenant" attribute, when present. The envelope's
// ID is the stream record's eventID and its payload holds "keys", "new" and
// "old" (the images as plain JSON, absent when the record has none).
//
// Best effort means what it says: no order, no retries beyond SQS's own
// redelivery of a message the consumer never finished, no dead letters. A
// handler error or an undecodable record is logged and counted, and the
// message is deleted.
package recordchange
