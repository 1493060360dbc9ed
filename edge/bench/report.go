package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// printTables writes the human report: one table per phase, the agent
// beside mosquitto with ratios.
func printTables(out io.Writer, r result) {
	p := r.Params
	fmt.Fprintf(out, "bench edge: %d bowls, mosquitto %s, %.0f s\n\n", p.Bowls, r.Mosquitto, r.Seconds)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	defer w.Flush()
	fmt.Fprintf(out, "durable (in process: agent sink + bbolt outbox, fsync on, %d bowls delivering 50-sample frames)\n", p.Bowls)
	fmt.Fprintln(w, "records/Deliver\tsamples/Deliver\tsamples/s\tDelivers/commit\t")
	for _, d := range r.Durable {
		fmt.Fprintf(w, "%d\t%d\t%s\t%.1f\t\n", d.RecordsPerDeliver, d.SamplesPerDeliver, rate(d.SamplesPerSec), d.DeliversPerCommit)
	}
	w.Flush()

	fmt.Fprintf(out, "\nlive (cloud broker up, %d samples at full speed, 50-sample frames; agent rate limit lifted)\n", p.LiveSamples)
	fmt.Fprintln(w, "subject\tacked samples/s\tat cloud samples/s\tx agent (cloud)\tlost\tpeak RSS MB\tpeak anon MB\t")
	base := 0.0
	for i, l := range r.Live {
		if i == 0 {
			base = l.CloudPerSec
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%.1f\t%.1f\t\n", l.Subject, rate(l.AckedPerSec), rate(l.CloudPerSec), ratio(l.CloudPerSec, base),
			l.Lost, mb(l.PeakMemory.VmRSS), mb(l.PeakMemory.RssAnon))
	}
	w.Flush()

	fmt.Fprintf(out, "\nbacklog (cloud broker down while %d samples are acknowledged; then up)\n", p.BacklogSamples)
	fmt.Fprintln(w, "subject\tfill samples/s\tVmRSS MB\tRssAnon MB\tRssFile MB\treconnect s\tdrain samples/s\tdrain peak anon MB\tat cloud\tlost\t")
	for _, b := range r.Backlog {
		fmt.Fprintf(w, "%s\t%s\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t%.1f\t%d\t%d\t\n", b.Subject, rate(b.FillPerSec), mb(b.WithBacklog.VmRSS),
			mb(b.WithBacklog.RssAnon), mb(b.WithBacklog.RssFile), b.ReconnectS, rate(b.DrainPerSec), mb(b.DrainPeak.RssAnon), b.AtCloud, b.Lost)
	}
	w.Flush()
	for _, b := range r.Backlog {
		if b.FileBytes > 0 {
			fmt.Fprintf(out, "  %s outbox file: %.1f MB\n", b.Subject, float64(b.FileBytes)/(1<<20))
		}
		if g := b.GoMemory; g != nil {
			fmt.Fprintf(out, "  %s Go heap with the backlog: in use %.1f MB, idle %.1f MB (released to the OS %.1f MB), next GC at %.1f MB\n",
				b.Subject, g.HeapInuseMB, g.HeapIdleMB, g.HeapReleasedMB, g.NextGCMB)
		}
		if b.DropLogs > 0 {
			fmt.Fprintf(out, "  %s logged %d \"dropped\" lines (max_queued_messages)\n", b.Subject, b.DropLogs)
		}
	}

	if len(r.Kill) > 0 {
		k := r.Kill[0]
		fmt.Fprintf(out, "\nkill -9 (%d bowls x 50 Hz in real time, %d SIGKILLs, cloud broker down %.1f s across the first %d; agent at its default 100 msg/s)\n",
			p.Bowls, k.Kills, k.OutageS, p.Kills*2/3)
	}
	fmt.Fprintln(w, "subject\tpushed\tacked\tat cloud\tLOST (acked, not at cloud)\tlost %\tdup deliveries\tp50 ms\tp99 ms\t")
	for _, k := range r.Kill {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%.2f\t%d\t%.1f\t%.1f\t\n", k.Subject, k.Pushed, k.Acked, k.AtCloud, k.Lost, k.LostPct, k.Dups,
			k.LatencyMS.P50, k.LatencyMS.P99)
	}
	w.Flush()
	fmt.Fprintln(out, "  latency: frame handed to the MCU ring / publisher -> first sample at the cloud broker, warm-up before the outage")
	printTargets(out, r)
}

// printTargets sets the run against issue 6's targets. It reports; it
// does not judge a slow machine a failure.
func printTargets(out io.Writer, r result) {
	fmt.Fprintln(out, "\ntargets (issue 6)")
	best, worst := 0.0, 0.0
	for i, d := range r.Durable {
		if i == 0 || d.SamplesPerSec > best {
			best = d.SamplesPerSec
		}
		if i == 0 || d.SamplesPerSec < worst {
			worst = d.SamplesPerSec
		}
	}
	fill := 0.0
	var agentBacklog *backlogResult
	for i, b := range r.Backlog {
		if b.Subject == "bowline-edge" {
			agentBacklog, fill = &r.Backlog[i], b.FillPerSec
		}
	}
	fmt.Fprintf(out, "  >= 100k samples/s durable: in process %s..%s (1..64 frames per Deliver), through the agent process %s  [%s]\n",
		rate(worst), rate(best), rate(fill), verdict(best >= 1e5 && fill >= 1e5))
	if b := agentBacklog; b != nil {
		fmt.Fprintf(out, "  RSS < 40 MB with a %d-sample backlog: VmRSS %.1f MB (RssAnon %.1f, RssFile %.1f)  [%s]\n",
			b.Samples, mb(b.WithBacklog.VmRSS), mb(b.WithBacklog.RssAnon), mb(b.WithBacklog.RssFile), verdict(b.WithBacklog.VmRSS < 40*1024))
	}
	agentLost, baseLost := -1, 0
	for _, k := range r.Kill {
		if k.Subject == "bowline-edge" {
			agentLost = k.Lost
		} else {
			baseLost = max(baseLost, k.Lost)
		}
		fmt.Fprintf(out, "  kill -9: %s lost %d of %d acknowledged samples\n", k.Subject, k.Lost, k.Acked)
	}
	if agentLost >= 0 {
		fmt.Fprintf(out, "  zero loss where mosquitto loses  [%s]\n", verdict(agentLost == 0 && baseLost > 0))
	}
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func rate(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

func ratio(v, base float64) string {
	if base == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", v/base)
}

func mb(kb int) float64 { return float64(kb) / 1024 }
