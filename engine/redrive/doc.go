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
// in the DLQ, in its place, and reported as skipped with the reason.
//
// # Reaching a message behind others of its group
//
// The DLQ is FIFO with the tenant as message group. Receiving a group's
// first message locks the group: no later message of it is handed out
// until the received ones are deleted or visible again. SQS hands out up
// to ten messages of a group per receive, the local emulator one. So a run
// first receives through the whole queue holding every unselected message
// invisible (Config.Hold) and moving the selected ones it is handed; what
// it holds at the end is released (visibility 0, the last held first), and
// the group keeps its order.
//
// A selected event can still be behind held messages: behind the first
// ten of its group on SQS, the first one on the emulator. Then the run
// walks the groups that may hold it, those whose tenant has a dead letter
// for a wanted event first, all blocked groups if that is not enough (and
// every blocked group for --all): each unselected message of the group, in
// order, is copied to the back of the group (same body, a fresh
// deduplication id) and deleted, selected ones are moved, until the first
// copy comes round. The group then holds its unselected messages in the
// same order, under new message ids (Result.Walked names the groups). A
// copy is sent before its original is deleted, so a failure leaves at
// worst a duplicate, which the inbox makes harmless.
//
// # Caveats
//
// A dry run never walks (a walk rewrites messages): it reports events
// behind held messages as not found. A walked message's retention starts
// again, and an event dead-lettered into a group while the run walks it
// lands among the copies, not after them. A run keeps its held messages
// invisible by renewing their visibility every Config.Hold/2; one that
// came back anyway is held again under its new receipt handle. Finding an
// id that is in no dead letter walks every group that holds a message.
package redrive
