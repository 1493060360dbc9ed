// Command bench is the Mosquitto side-by-side of the edge section of
// scripts/bench (run through scripts/bench-edge, which installs mosquitto).
// It measures the edge agent beside the gateway buffer it replaces, in one
// run: Debian's mosquitto configured as a bridge with persistence between
// the bowls and the same "cloud" broker (an embedded mochi broker on
// 127.0.0.1).
//
// Proving ground: a measurement of the product, never linked into it
// (docs/README.md, "The proving ground").
//
//	go run ./edge/bench [--json] [--quick] [--seed N]
//
// Phases, each with a fresh cloud broker:
//
//   - durable: samples/s made durable by the agent's sink and outbox in
//     process (group commit, fsync on), four bowls delivering bridge-sized
//     batches of 50-sample weight frames.
//   - live: four simulated bowls at full speed through a real bowline-edge
//     process (unix-socket MCU links, the agent's publish rate limit
//     lifted) and, beside it, four QoS 1 publishers into mosquitto (both
//     autosave settings); samples/s acknowledged to the source, samples/s
//     at the cloud broker and samples lost on the way.
//   - backlog: the cloud broker down while the bowls push a backlog
//     (1,000,000 samples; 200,000 with --quick) into the agent and into
//     mosquitto (default autosave); the process's VmRSS, RssAnon and
//     RssFile with the backlog held (and the agent's Go heap from its
//     /metrics), then the broker up: the drain rate, counted from the
//     moment the broker is back (reconnect included), and how much of the
//     backlog reached the cloud at all.
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
// mosquitto must be on PATH (scripts/bench-edge installs it). Run as root,
// mosquitto is told to stay root ("user root"), or it would switch to the
// mosquitto user and be unable to write its persistence file in the
// benchmark's temporary directory.
//
// # Caveats
//
// SIGKILL tests a process crash, not a power cut: the page cache survives,
// so a buffer that writes without fsync is not punished here. At full speed
// the simulated MCUs stamp frames with 50 Hz uptimes (a backlog measured
// earlier), so the gateway's clock runs ahead of real time during the
// live and backlog phases. Each sample
// carries a unique value (milligrams = its number within its bowl) so the
// cloud side can tell exactly which samples arrived.
package main
