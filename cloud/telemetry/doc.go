// Package telemetry writes the telemetry stream: a Producer that batches
// records into Kinesis PutRecords calls (at most 500 records / 5 MiB per
// call, after a short linger), retries failed records one by one and backs
// off from throttling, and tells each record's caller exactly once whether
// Kinesis accepted it.
//
// Its user is the topic rules' stand-in (cloud/rules): it puts one record
// per MQTT telemetry message and acknowledges the message from the
// record's callback, so a message is acknowledged only once its data is in
// the stream, with ProducerConfig.MaxAttempts set: a record still refused
// after that many calls is handed back (ErrRetriesExhausted) for its error
// queue. (Cloud ingest used it until it took events only.)
//
// # Caveats
//
// Kinesis is at-least-once: a record whose call timed out after Kinesis
// stored it is sent again. Consumers drop duplicates by a key the records
// carry (record format 2: (thing, outbox, seq) inside the payload).
//
// A record's partition key and data must fit one Kinesis record (1 MiB);
// Put refuses larger ones rather than splitting them.
package telemetry
