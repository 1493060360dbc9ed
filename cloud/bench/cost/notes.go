package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/bowline-iot/bowline/internal/pricing"
)

// runNotes says what a run measured beside the bill: the stages that ran,
// the consumer's counts, the DynamoDB units by kind of row, the acks on
// both sides, and what the local stand-ins did that AWS does not bill.
func runNotes(c pricing.Counts, x runExtra) []string {
	var measured []string
	for _, s := range []pricing.Stage{pricing.StageRules, pricing.StageConsumer, pricing.StageQueues, pricing.StageEvents} {
		if c.Measured(s) {
			measured = append(measured, string(s))
		}
	}
	notes := []string{"stages measured: broker (connections, telemetry, ack deliveries), " + strings.Join(measured, ", ")}
	k := x.Consumer
	if k.Invocations > 0 {
		notes = append(notes,
			fmt.Sprintf("consumer: %d invocations, %d records (%.1f per invocation), handler %v (%.2f ms per record, of which %.2f ms decoding, thread CPU time) at %d MB arm64 = %.4f GB-s (at 128, 256, 512, 1024 MB: %s); at scale invocations follow records per shard in batches of %d per %v",
				k.Invocations, k.Records, float64(k.Records)/float64(k.Invocations), k.Handler.Round(time.Millisecond),
				float64(k.Handler.Microseconds())/1000/float64(max(1, k.Records)), float64(k.CPU.Microseconds())/1000/float64(max(1, k.Records)),
				k.MemoryMB, gbSeconds(k.Handler, k.CPU, k.MemoryMB), memoryTable(k), k.BatchSize, k.BatchWindow),
			fmt.Sprintf("consumer: Kinesis %d GetRecords, %d bytes read", c.KinesisGetRecords, c.KinesisBytesRead))
	}
	u := x.Usage
	for _, kind := range slices.Sorted(maps.Keys(unionKeys(u.WRUByKind, u.RRUByKind))) {
		if u.WRUByKind[kind] == 0 && u.RRUByKind[kind] == 0 {
			continue
		}
		notes = append(notes, fmt.Sprintf("dynamodb %s: %.1f WRU, %.1f RRU", kind, u.WRUByKind[kind], u.RRUByKind[kind]))
	}
	var calls []string
	for _, op := range slices.Sorted(maps.Keys(u.Calls)) {
		if strings.HasPrefix(op, "DynamoDB.") && u.Calls[op] > 0 {
			calls = append(calls, fmt.Sprintf("%s %d", strings.TrimPrefix(op, "DynamoDB."), u.Calls[op]))
		}
	}
	if len(calls) > 0 {
		notes = append(notes, fmt.Sprintf("dynamodb calls: %s; capacity from the response %d, sized from the items %d",
			strings.Join(calls, ", "), u.CapacityReported, u.CapacitySized))
	}
	a, g := x.AckTraffic, x.Gateways
	notes = append(notes,
		fmt.Sprintf("acks: %d HTTPS publishes (%d x 5 KB), %d deliveries to gateways (%d x 5 KB), %d PUBACKs from gateways (QoS 0)",
			k.HTTPSPublishes, k.HTTPSPublishUnits, a.PublishesOut, a.Units, a.PubAcksIn),
		fmt.Sprintf("gateways: %d batches, %d acks applied (%d ignored, %d bad), %d samples deleted, %d resent after ack_timeout; %d held unacknowledged at the end, the oldest sent %v before",
			g.Batches, g.AcksApplied, g.AcksIgnored, g.AcksBad, g.SamplesAcked, g.Resent, g.Unacked, g.OldestUnacked.Round(time.Second)))
	if e := x.Events; e != nil {
		var pipes []string
		for _, name := range slices.Sorted(maps.Keys(e.PipesRequests)) {
			pipes = append(pipes, fmt.Sprintf("%s %d", name, e.PipesRequests[name]))
		}
		var wru []string
		for _, t := range slices.Sorted(maps.Keys(unionKeys(e.Usage.WRUByKind, e.Usage.RRUByKind))) {
			wru = append(wru, fmt.Sprintf("%s %.1f/%.1f", t, e.Usage.WRUByKind[t], e.Usage.RRUByKind[t]))
		}
		n := float64(max(1, e.Events))
		notes = append(notes,
			fmt.Sprintf("events: a pass of %d bowl events (%d emitted), added at %d per bowl per day; each published by Basic Ingest to the events rule's stand-in, into the events stream, handed alone to ingest's HandleRecords by the events mapping's stand-in", e.Events, e.Emitted, eventsPerBowlDay),
			fmt.Sprintf("events: per event %.2f rules triggered + %.2f actions (5 KB units), %.2f Kinesis records (%.2f PUT units) into the events stream, %.2f Pipes requests (%s), %.2f SQS FIFO + %.2f SQS standard requests, %.2f WRU, %.2f RRU; the events consumer: %d invocations, %d records, handler %.1f ms per event at %d MB; worker deleted %d messages",
				float64(e.RuleUnits)/n, float64(e.RuleActionUnits)/n, float64(e.Usage.KinesisRecords)/n, float64(e.Usage.KinesisPutUnits)/n, float64(sumInt(e.PipesRequests))/n, strings.Join(pipes, ", "),
				float64(e.Usage.SQSFIFORequests)/n, float64(e.Usage.SQSRequests)/n, sumFloat(e.Usage.WRU)/n, sumFloat(e.Usage.RRU)/n,
				e.Invocations, e.Records, float64(e.Handler.Microseconds())/1000/n, ingestMemoryMB, e.WorkerDeleted),
			"events: the pass's WRU/RRU by table and kind of row: "+strings.Join(wru, ", ")+"; DynamoDB Streams reads left out (a Pipe polls each shard whatever the traffic)")
	}
	if k.CheckpointWrites > 0 {
		notes = append(notes, fmt.Sprintf("not billed: the event source stand-in's %d checkpoint writes (%.1f WRU on the inbox table); in AWS Lambda keeps its own position", k.CheckpointWrites, k.CheckpointWRU))
	}
	return notes
}

// memoryTable is the consumer's GB-seconds of the run at other memory
// sizes (gbSeconds), for choosing MemorySize.
func memoryTable(k ConsumerCounts) string {
	var out []string
	for _, mb := range []int{128, 256, 512, 1024} {
		out = append(out, fmt.Sprintf("%.4f", gbSeconds(k.Handler, k.CPU, mb)))
	}
	return strings.Join(out, ", ")
}

func sumInt(m map[string]int64) (n int64) {
	for _, v := range m {
		n += v
	}
	return n
}

func sumFloat(m map[string]float64) (n float64) {
	for _, v := range m {
		n += v
	}
	return n
}

func unionKeys(a, b map[string]float64) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}
