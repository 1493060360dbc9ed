// Package app is Bowline's one composition root. Open turns a stack's
// resource names and an aws.Config into the clients, the queue URLs
// (resolved once, on first use), ONE *engine.Engine with the Bowline
// catalog and its metrics, and the stores the engine's consumers share.
// Every process part is handed out from there: Worker, Relay, Redriver,
// RecordChanges, API (and APIWithConsole, with the web console Console
// builds mounted beside it: cloud/api does not know the console),
// Subscribers, Ingest and Rules (the topic rules' stand-in). Bind is the one place
// handlers are bound to subscriptions, and Group supervises what runs.
// Each part's constructor also registers that part's metrics on the
// App's Registry (metrics.go), so a process cannot run a part unobserved.
//
// `bowline` (cloud/cmd/bowline) and `bowline dev` (cloud/dev) build on this
// package; nothing else constructs engines or resolves queue URLs, so every
// emit in a process group-commits through the same engine (docs/group-commit.md).
//
// With BOWLINE_RECORD_CALLS set, every AWS call is recorded (internal/awscalls)
// under the part that made it: the process's own (Config.Part, the command),
// or, for what Open hands out, the part's label (Part, the Part* constants),
// so the tests can check each call against that part's IAM role (docs/iam.md).
package app
