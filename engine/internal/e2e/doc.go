// Package e2e holds end-to-end tests of Engine II as an operator runs it:
// the bowline binary is built once per test binary and its relay, worker,
// dead-letters and redrive commands run as real processes against the local
// stack's provisioned tables and queues.
package e2e
