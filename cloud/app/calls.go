package app

import (
	"context"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/awscalls"
)

// The parts an App hands out, as their AWS calls are recorded (docs/iam.md
// maps each one to the role that makes it in AWS). A process run as one
// `bowline` command records under the command's name (Config.Part); these
// are the labels of the parts App's methods build.
const (
	// PartEngine labels the engine a process shares between several parts
	// (`bowline dev`): its head reads, event rows and idempotency rows.
	// Each part's own writes in an emit are recorded under the part.
	PartEngine = "engine"
	PartIngest = "ingest"
	// PartWorker is the worker, its subscribers and the record-change
	// consumer (`bowline worker`).
	PartWorker = "worker"
	// PartAPI is the HTTP API with its reconciler (`bowline api`).
	PartAPI = "api"
	// PartConsole is the web console, which `bowline api` serves.
	PartConsole = "console"
	// PartRelay is what only the local relay does (checkpoints, the
	// stream lookup, the queue URL); PartPipe(name) is what the pipe of
	// that name does in AWS too (read the stream, send to the queue).
	PartRelay = "relay"
	// PartRules is the local stand-in for the AWS IoT topic rules
	// (`bowline rules`): in AWS the rules engine makes its calls.
	PartRules       = "rules"
	PartRedrive     = "redrive"
	PartDeadLetters = "dead-letters"
	PartDevices     = "devices"
	// PartDev is what only `bowline dev` does: its status line and
	// background chain check.
	PartDev = "dev"
)

// PartPipe is the label of the relay's calls that the EventBridge Pipe
// name makes in AWS: "relay:events", "relay:record-changes".
func PartPipe(name string) string { return PartRelay + ":" + name }

// Part returns the App as part name sees it: the same engine, catalog,
// registry and queue URLs, with clients, Inbox and DeadLetters whose AWS
// calls are recorded under name. With recording off, or for the App's own
// part, it is the App Open returned. Do not Close a part view.
func (a *App) Part(name string) *App {
	root := a
	if a.root != nil {
		root = a.root
	}
	if root.calls == nil || name == root.part {
		return root
	}
	root.shared.mu.Lock()
	defer root.shared.mu.Unlock()
	if v, ok := root.shared.views[name]; ok {
		return v
	}
	v := &App{
		Names: root.Names, AWS: root.AWS, Registry: root.Registry, Logger: root.Logger,
		Catalog: root.Catalog, Engine: root.Engine,
		part: name, calls: root.calls, root: root, shared: root.shared,
	}
	v.connect()
	if err := v.stores(); err != nil {
		// Cannot happen: Open built the same stores from the same names.
		v.Inbox, v.DeadLetters = root.Inbox, root.DeadLetters
	}
	root.shared.views[name] = v
	return v
}

// emitter is the engine as the part's emits reach it.
type emitter interface {
	EmitEvent(ctx context.Context, ev engine.Event) (engine.Envelope, error)
}

// emitter returns the App's engine for this part's emits: with recording
// on, the part's own writes in each emit's transaction are recorded under
// the part, whichever part's emit the engine commits them with.
func (a *App) emitter() emitter {
	if a.calls == nil {
		return a.Engine
	}
	return claimingEmitter{Engine: a.Engine, part: a.part, calls: a.calls}
}

// claimingEmitter claims an emit's writes for its part while it commits.
type claimingEmitter struct {
	*engine.Engine
	part  string
	calls *awscalls.Recorder
}

func (e claimingEmitter) EmitEvent(ctx context.Context, ev engine.Event) (engine.Envelope, error) {
	defer e.calls.Claim(e.part, ev.Writes)()
	return e.Engine.EmitEvent(ctx, ev)
}
