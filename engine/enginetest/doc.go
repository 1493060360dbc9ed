// Package enginetest holds test helpers shared by the engine's consumer
// packages: short-visibility test queues on the local stack, event rows
// written straight into the events table, and draining a queue. Everything
// it creates is removed by t.Cleanup.
package enginetest
