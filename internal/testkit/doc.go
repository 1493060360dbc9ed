// Package testkit holds the few helpers every Bowline test package needs:
// a logger that writes to the test's own output, WaitFor, which polls a
// condition with a hang guard, and child processes.
//
// A test that runs a process (the test binary again, TestBinary, or a
// built command) starts it with StartChild, StartChildLines or RunChild:
// the child gets its own process group and, on Linux, SIGKILL as its
// parent-death signal, its output goes to the test's output unless the
// test keeps it, the test's cleanup kills the group and reaps it, and
// Wait reports how it exited (ExitCode). Context ends a margin before
// the binary's -timeout, so a wait on a hung child fails the test with a
// message naming the child instead of the binary panicking.
//
// It imports only the standard library, so edge and firmware-bridge
// tests may use it without pulling the AWS SDK into the gateway's
// dependency graph.
//
// # Caveats
//
// Like t.Log, the logger must not be written to after the test and its
// cleanups have finished: stop goroutines that log in a t.Cleanup. A
// child's output is done by then: the cleanup waits for it.
//
// Children a child starts with StartChild are in groups of their own:
// they die by the parent-death signal when their parent does, not by its
// group's SIGKILL.
package testkit
