package main

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// printReport writes r as the text of .bench/fleet.txt.
func printReport(w io.Writer, r report) {
	f, k, ch, cfg := r.Fleet, r.Consumer, r.Check, r.Config
	fmt.Fprintf(w, "fleet: %d gateways (%d connected), %d bowls, one batch per gateway per %v for %v (%g Hz per bowl), acks every %v, resend after %v, %d shards\n",
		f.Gateways, f.Connected, f.Bowls, cfg.Interval, cfg.Duration, cfg.SampleHz, cfg.AckEvery, cfg.AckTimeout, cfg.Shards)
	fmt.Fprintf(w, "setup %.0fs, connect %.1fs, publish %.0fs, drain %.0fs; RLIMIT_NOFILE %d\n\n", r.SetupSeconds, f.ConnectSeconds, r.PublishSeconds, f.DrainSeconds, r.FileLimit)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, v any, note string) { fmt.Fprintf(tw, "%s\t%v\t  %s\n", name, v, note) }
	row("batches published", f.Published, fmt.Sprintf("%.1f/s; %d resends, %d publish errors", float64(f.Published)/r.PublishSeconds, f.Resends, f.PublishErrors))
	row("batches PUBACKed", f.Pubacked, "")
	row("samples sent", f.SamplesSent, fmt.Sprintf("%.0f/s; %.2f payload bytes/sample, largest batch %d B", float64(f.SamplesSent)/r.PublishSeconds, ratio(f.PayloadBytes, f.SamplesSent), f.MaxPayload))
	row("samples acknowledged", ch.AckedSamples, fmt.Sprintf("named by an ack; %d of them in batches the gateways could forget", f.SamplesAcked))
	row("ACKNOWLEDGED SAMPLES LOST", ch.AckedLost, "acked but not in the stream (must be 0)")
	row("samples unacknowledged at end", f.UnackedSamples, fmt.Sprintf("%d batches, oldest %v", f.UnackedBatches, f.OldestUnacked.Round(time.Second)))
	row("gateways that got an ack", f.GatewaysAcked, fmt.Sprintf("of %d; acks per gateway min/median/max %d/%d/%d", f.Gateways, f.AcksPerGateway[0], f.AcksPerGateway[1], f.AcksPerGateway[2]))
	row("acks received", f.Acks, fmt.Sprintf("published by the consumer: %d (%d failed); other outbox %d, bad %d, beyond sent %d", k.AcksPublished, k.AckFailures, f.AcksOtherOutbox, f.AcksBad, f.AckedBeyondSent))
	row("stream records", ch.Records, fmt.Sprintf("%d undecodable; %d samples, %d distinct, %d duplicates", ch.BadRecords, ch.Samples, ch.Unique, ch.Duplicates))
	row("sent samples not in stream", ch.SentNotInStream, "(unacknowledged ones may be; acked ones must not)")
	row("consumer records", k.Records, fmt.Sprintf("%d handled of %d in the stream; %d samples, %d duplicates, %d rejected, %d gaps raised", k.RecordsHandled, ch.Records, k.Samples, k.Duplicates, k.Rejected, k.Gaps))
	row("consumer writes", k.StateWrites+k.RollupWrites, fmt.Sprintf("%d state, %d rollup", k.StateWrites, k.RollupWrites))
	row("consumer lag p50", k.LagP50.Round(time.Millisecond), fmt.Sprintf("arrival in stream to handled; p99 %v, max %v", k.LagP99.Round(time.Millisecond), k.LagMax.Round(time.Millisecond)))
	row("iterator age at end", k.IteratorAgeAtEnd.Round(time.Millisecond), fmt.Sprintf("age of the oldest record in a batch handled in the last 30 s of publishing; MillisBehindLatest then %v, worst %v (kinesis-local may always say 0)", k.BehindAtEnd, k.BehindMax))
	row("rule evaluations", r.Rules.Evaluations, fmt.Sprintf("%d actions, %d errors, %d evaluation errors", r.Rules.Actions, r.Rules.Errors, r.Rules.EvaluationErrors))
	row("rules stand-in peak in flight", r.RulesPeakInFlight, fmt.Sprintf("messages at once, bound %d", cfg.RulesInFlight))
	row("rule-errors depth", r.RuleErrors, "")
	row("telemetry-consumer-dlq depth", r.ConsumerDLQ, "")
	row("gateway connection losses", f.Lost, "")
	_ = tw.Flush()

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "part\tRSS MiB\tpeak RSS\tGo heap\tpeak heap\tfds\tpeak fds\tCPU s\t")
	names := make([]string, 0, len(r.Processes))
	for n := range r.Processes {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		p := r.Processes[n]
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%s\t%s\t%d\t%s\t%.0f\t\n", n, p.RSSMiB, p.PeakRSSMiB, heap(p.HeapMiB), heap(p.PeakHeapMiB), p.FDs, peak(p.PeakFDs),
			p.CPUSeconds)
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "\ncloud = this process: rules stand-in, event source, consumer, IoT data endpoint; CPU is since each process started (emulators: their start-up included)")
	fmt.Fprintln(w, "baseline (v1 JSON per bowl per second):", r.Baseline)
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func heap(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", v)
}

func peak(v int) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprint(v)
}
