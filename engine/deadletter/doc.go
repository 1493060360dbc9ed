// Package deadletter records and reads dead letters: work nobody did.
//
// A dead letter is written when a DURABLE subscription's inbox row goes
// dead (a terminal handler error, or a failure on the queue's last allowed
// receive). It lives in the dead_letters table under the event's tenant,
//
//	pk = TENANT#<tenant>   sk = DL#<event_id>#<subscription>
//
// so a tenant's letters are one Query and an event's letters one
// begins_with. A poison pill, a message whose body does not even decode to
// an event, has no trustworthy tenant and lives under the global partition
//
//	pk = POISON            sk = <RFC 3339 time>#<message id>
//
// with its raw body. Writing the same (event, subscription) again
// overwrites the letter, so one dead subscription is one letter however
// often it dies. Redrive marks the letters of the events it moves back; a
// marked letter no longer counts as open.
//
// Every letter is bounded to fit a DynamoDB item whatever its input (Bound)
// and expires after TTL (bound.go, docs/dead-letters.md).
package deadletter
