// Package enginetest holds test helpers shared by the engine's consumer
// packages: short-visibility test queues on the local stack, event rows
// written straight into the events table, and draining a queue. Everything
// it creates is removed by t.Cleanup.
//
// FIFO is an in-memory SQS FIFO queue that follows the SQS documentation
// where the local emulator does not (ten messages of one group per
// receive, stale receipt handles refused): the double for tests of what a
// consumer does with real SQS semantics.
package enginetest
