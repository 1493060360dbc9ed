// Package pipeline runs the commerce path in one process on a provisioned
// stack: the fake providers, the HTTP API, the events relay (DynamoDB
// Streams -> events.fifo) and the worker with the cloud subscribers. The
// commerce end-to-end test and the e2e benchmark share it; `bowline dev`
// (cloud/dev) wires the same parts, and the bowl path, in its own System.
package pipeline
