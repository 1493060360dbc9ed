package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/cloud/console"
	"github.com/bowline-iot/bowline/cloud/guard"
	"github.com/bowline-iot/bowline/engine/reconcile"
)

// ConsoleOptions are what the App cannot know about the console of this
// process.
type ConsoleOptions struct {
	// OpsToken logs operators in (BOWLINE_OPS_TOKEN). Required: without
	// it Console returns console.ErrNoOpsToken.
	OpsToken string
	// Agents are the edge agents whose status endpoints this process can
	// reach (bowline dev's); Calls the providers' calls (its fakes).
	Agents []console.Agent
	Calls  console.ProviderCalls
	// SimClock is bowline dev's simulated clock, shown in the header.
	SimClock func() time.Time
	// NoTelemetry: the console does not read the rollups (console.Config).
	NoTelemetry bool
	// Refresh and VerifyEvery: console.Config's; zero means its defaults.
	Refresh, VerifyEvery time.Duration
	// OneClickLogin: console.Config's (bowline dev only).
	OneClickLogin bool
	// TrustedProxies are the load balancer's addresses
	// (api.Settings.TrustedProxies); the console shares the API's guard.
	TrustedProxies guard.Proxies
	// Logger defaults to the App's.
	Logger *slog.Logger
}

// Console builds the web console on the App's clients, stores, queues,
// registry and a redriver. Run it (its Run method) for as long as the API
// that mounts it (APIWithConsole) serves.
func (a *App) Console(ctx context.Context, opts ConsoleOptions) (*console.Console, error) {
	if opts.OpsToken == "" {
		return nil, console.ErrNoOpsToken
	}
	a = a.Part(PartConsole)
	log := opts.Logger
	if log == nil {
		log = a.Logger
	}
	queue, dlq, err := a.eventQueues(ctx)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	rc, err := a.QueueURL(ctx, a.Names.RecordChangesQueue())
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	red, err := a.redriver(ctx, nil) // the console's own: it redrives in the API's process
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	g, err := a.guardFor(opts.TrustedProxies)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	return console.New(console.Config{
		OpsToken: opts.OpsToken, Names: a.Names, DB: a.DynamoDB,
		Chains: a.Verifier(), DeadLetters: a.DeadLetters, Inbox: a.Inbox, Redriver: red,
		Unsettled:     reconcile.InboxCheck{DB: a.DynamoDB, EventsTable: a.Names.EventsTable(), InboxTable: a.Names.InboxTable(), Subscriptions: a.Catalog.Subscriptions},
		Subscriptions: a.Catalog.Subscriptions,
		Queue:         a.SQS, QueueURLs: console.QueueURLs{Events: queue, DLQ: dlq, RecordChanges: rc},
		Rollups: a.DynamoDB, NoTelemetry: opts.NoTelemetry,
		Gatherer: a.Registry, Agents: opts.Agents, Calls: opts.Calls, SimClock: opts.SimClock,
		Refresh: opts.Refresh, VerifyEvery: opts.VerifyEvery, Logger: log,
		OneClickLogin: opts.OneClickLogin, Guard: g,
	})
}

// consoleMounts are the routes that put the console beside the API on
// the API's listener (api.Config.Mounts). The console is cloud/app's to
// place, not the API's: cloud/api does not import cloud/console.
//
// consoleAddr is api.Settings.ConsoleAddr: "" mounts con under
// console.Prefix (and redirects /console there), or the console's 403
// refusal when con is nil (no ops token); anything else mounts nothing,
// so the API's listener answers /console/ with 404 like any unknown route
// (docs/security.md: the console off the public listener).
func consoleMounts(consoleAddr string, con http.Handler) map[string]http.Handler {
	if consoleAddr != "" {
		return nil
	}
	if con == nil {
		con = console.Disabled("this API has no console: set " + api.OpsTokenEnv + " to enable it (operators log in with that token).")
	}
	return map[string]http.Handler{
		console.Prefix: con,
		"GET /console": http.RedirectHandler(console.Prefix, http.StatusMovedPermanently),
	}
}

// guardFor returns the process's one guard (cloud/guard) on the App's
// registry, built with proxies on first use: the API and the console
// count a source's failed credentials together.
func (a *App) guardFor(proxies guard.Proxies) (*guard.Guard, error) {
	a.shared.mu.Lock()
	defer a.shared.mu.Unlock()
	if a.shared.guard == nil {
		g, err := guard.New(guard.Config{Proxies: proxies, Observer: guard.NewMetrics(a.Registry), Logger: a.Logger})
		if err != nil {
			return nil, err
		}
		a.shared.guard = g
	}
	return a.shared.guard, nil
}
