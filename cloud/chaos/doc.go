// Package chaos runs the whole Bowline system as separate processes under
// a seeded fault schedule and checks, at the end, that nothing was lost or
// done twice: ./scripts/chaos (main in cloud/bench/chaos). docs/chaos.md
// has the design, the fault kinds and the invariants.
//
// Proving ground: it breaks the product on purpose and is never linked
// into it; the seed column's workers are the harness's own program,
// cloud/bench/chaos/seedworker, not `bowline worker` (docs/README.md, "The
// proving ground").
//
// One run, per inbox mode (Bowline's, then the seed article's baseline,
// engine/inbox/seedinbox, with the same schedule):
//
//	simulated bowls (bowline-edge simulate, one process per gateway)
//	  -> bowline-edge run (one per gateway, own bbolt outbox, wire v2)
//	  -> toxiproxy -> Mosquitto (internal/mosquitto)
//	  -> bowline rules (telemetry batches and bowl events by Basic Ingest
//	     -> Kinesis telemetry and events, record format 2)
//	     -> bowline consume (event source stand-in + cloud/durable)
//	     -> bowline iot-endpoint (HTTPS Publish of acks) -> Mosquitto -> gateways
//	     -> 2 x bowline ingest (event source stand-in on the events stream + cloud/ingest)
//	  -> DynamoDB / Kinesis (throttle proxy -> toxiproxy -> emulator)
//	  -> bowline relay -> SQS (toxiproxy -> fauxqs)
//	  -> 2 x bowline worker (seed mode: 2 x seedworker) -> fake providers (in process)
//	bowline api <- orders and signed payment webhooks from this package
//
// Faults are drawn from the seed: SIGKILL and restart of edge, ingest,
// relay, worker, api, rules, consume and iot-endpoint processes; a broker outage; latency, resets and
// timeouts on the toxiproxy links; throttling answers from DynamoDB and
// Kinesis; provider 5xx answers and hangs; edge power cuts, on a FUSE
// power-cut disk (internal/powercut) under each gateway's outbox. The
// binaries are built once into a temporary directory.
//
// # Caveats
//
// Without FUSE a power cut is a SIGKILL of the agent (the page cache then
// survives it); the report counts the real cuts. The simulated bowls run
// in real time, so a run lasts at least Config.SimDuration per inbox mode.
package chaos
