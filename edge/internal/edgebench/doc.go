// Command edgebench measures the edge agent beside the gateway buffer it
// replaces, in one run: Debian's mosquitto configured as a bridge with
// persistence between the bowls and the same "cloud" broker (an embedded
// mochi broker on 127.0.0.1).
//
//	go run ./edge/internal/edgebench [--json] [--quick] [--seed N]
//
// Phases, each with a fresh cloud broker:
//
//   - durable: samples/s made durable by the agent's sink and outbox in
//     process (group commit, fsync on), four bowls delivering bridge-sized
//     batches of 50-sample weight frames.
//   - live: four simulated bowls at full speed through a real bowline-edge
//     process (unix-socket MCU links) and, beside it, four QoS 1 publishers
//     into mosquitto; samples/s acknowledged to the source and samples/s at
//     the cloud broker.
//   - backlog: the cloud broker down while the bowls push a backlog
//     (1,000,000 samples; 200,000 with --quick) into each subject; the
//     subject process's VmRSS, RssAnon and RssFile with the backlog held,
//     then the broker up and the drain rate, and how much of the backlog
//     reached the cloud at all.
//   - kill: 50 Hz x 4 bowls in real time, the cloud broker down for most of
//     the run, and the same schedule of SIGKILLs of the subject process
//     (restarted each time) for the agent, mosquitto with the default
//     autosave_interval and mosquitto with autosave_on_changes. Loss is a
//     sample the source saw acknowledged (the MCU's cumulative ack; the
//     mosquitto PUBACK) that never reached the cloud broker, by (thing,
//     sample). Publish-to-cloud latency p50/p99 comes from the warm-up
//     before the outage.
//
// The agent runs as a real process built from ./edge/cmd/bowline-edge;
// mosquitto must be on PATH (scripts/bench-edge installs it). Each sample
// carries a unique value (milligrams = its number within its bowl) so the
// cloud side can tell exactly which samples arrived.
package main
