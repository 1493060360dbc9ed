// Package testkit holds the few helpers every Bowline test package needs:
// a logger that writes to the test's own output, and WaitFor, which polls a
// condition with a hang guard.
//
// It imports only the standard library, so edge tests may use it without
// pulling the AWS SDK into the gateway's dependency graph.
//
// # Caveats
//
// Like t.Log, the logger must not be written to after the test and its
// cleanups have finished: stop goroutines that log in a t.Cleanup. A child
// process's stderr can go straight to the test too: cmd.Stderr = t.Output().
package testkit
