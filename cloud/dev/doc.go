// Package dev runs the whole Bowline system on one machine, as `bowline dev`
// does: the local AWS emulators and the embedded MQTT broker
// (internal/localstack), provisioning, device registration, and every
// service in this process:
//
//	fake providers (Shopify, shipping, notifications)  cloud/fakes
//	topic rules' stand-in: MQTT -> Kinesis              cloud/rules
//	telemetry consumer behind its event source          cloud/eventsource, cloud/durable
//	ingest: events stream -> Emit, behind its source    cloud/eventsource, cloud/ingest
//	relays: events and record-changes pipes             engine/relay
//	worker with the cloud subscribers                   engine/worker, cloud/subscribers
//	record-change consumer (BEST_EFFORT lane)           engine/recordchange
//	HTTP API with the web console                       cloud/api, cloud/console
//	N simulated bowls, each with its own edge agent     firmware-bridge/sim, edge/agent
//
// The bowls speak the real firmware protocol to their agents over unix
// sockets; each agent has its own bbolt outbox and publishes to the broker
// under its tenant, exactly as a gateway would. Start builds all of it and
// returns a System (the end-to-end test, the console's browser test and the
// bowl benchmark use it); Run is the command: it prints the console's
// one-click login URL and a short summary (everything with Config.Verbose),
// then one line of live figures every Config.Every, until its context ends.
//
// # Simulated time
//
// With Config.Speed above 1 the bowls live on a simulated clock
// (Config.Start plus Speed times the real time elapsed). The agents map
// device uptime onto that clock (edge/agent Config.Clock), so readings and
// detected meals carry simulated times, and record_intake files meals under
// simulated days. Because that clock runs ahead of the wall clock, ingest's
// far-future check is widened in that case (see Config.Speed).
//
// # Caveats
//
// Everything lives in memory (the emulators) or under Config.DataDir (the
// outboxes); a run starts with empty tables, so outboxes kept in a DataDir
// from an earlier run are forwarded into the new stack.
//
// Two Systems must not share one broker unless their stacks differ: the
// rules' stand-in subscribes to its stack's Basic Ingest topics, but also to
// the unscoped v1 topics, and a thing the other System registered is an
// unknown thing here.
package dev
