// Package redrive moves dead-lettered events from the events DLQ back to
// the events queue so that fixed handlers run again: the operator's replay
// (`bowline redrive`).
//
// For each selected message in the DLQ, in this order: it releases the
// event's dead inbox rows (found through its dead letters), marks those
// letters redriven, sends the message back to the events queue with the
// same group and a fresh deduplication id (a FIFO queue would drop the
// original id for five minutes), and deletes it from the DLQ. Releasing
// first matters: a worker that received the message before its rows were
// released would find them still dead and skip the work again.
//
// A message that is not selected, or whose body is not an event, is left
// in the DLQ and reported as skipped with the reason.
//
// # Caveats
//
// SQS FIFO hands out one message group at a time: a selected event queued
// behind a skipped one of the same tenant is not reachable in the same run
// and is reported as not found; redrive the earlier one first or use --all.
package redrive
