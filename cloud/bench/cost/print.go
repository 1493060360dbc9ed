package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/bowline-iot/bowline/internal/pricing"
)

// report is what the program prints and writes as JSON.
type report struct {
	// Source says where the counts come from: "run" or "design".
	Source   string           `json:"source"`
	Run      string           `json:"run"`
	Counts   pricing.Counts   `json:"counts"`
	Estimate pricing.Estimate `json:"estimate"`
	Prices   []pricing.Price  `json:"prices"`
	Quotas   []pricing.Quota  `json:"quotas"`
	Notes    []string         `json:"notes,omitempty"`
	// Detail is a run's counts beside the model's: the gateways' acks,
	// every AWS call, the consumer's own counts.
	Detail *runExtra         `json:"detail,omitempty"`
	Extra  map[string]string `json:"extra,omitempty"`
}

func scaleName(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

func quantity(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 1e6:
		return fmt.Sprintf("%.3gM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

func printReport(w io.Writer, r report) {
	e := r.Estimate
	fmt.Fprintf(w, "cost: what AWS would bill the data path (telemetry and bowl events), %s (%s, prices read %s)\n", r.Source, pricing.Region, pricing.ReadOn)
	fmt.Fprintf(w, "  %s\n", r.Run)
	fmt.Fprintf(w, "  kinesis %s, %.1f bowls per gateway, quota loads at %.0fx the mean rate\n", e.Kinesis, e.BowlsPerGateway, peakOf(r))
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	if len(e.NotMeasured) > 0 {
		stages := make([]string, 0, len(e.NotMeasured))
		for s := range e.NotMeasured {
			stages = append(stages, string(s))
		}
		slices.Sort(stages)
		for _, s := range stages {
			fmt.Fprintf(w, "  not measured: %s — %s\n", s, e.NotMeasured[pricing.Stage(s)])
		}
	}

	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "$ per bowl per month\t"
	for _, n := range e.Scales {
		head += scaleName(n) + "\t"
	}
	fmt.Fprintln(tw, head+"")
	for _, l := range e.Lines {
		name := l.Component
		if l.Variant != "" {
			name += " " + l.Variant
		}
		if !l.InTotal {
			name = "(not in total) " + name
		}
		if len(l.Unverified) > 0 {
			name += " *"
		}
		if !l.Measured {
			name += " [not measured]"
		}
		row := name + "\t"
		for _, v := range l.PerBowl {
			row += fmt.Sprintf("%.6f\t", v)
		}
		fmt.Fprintln(tw, row)
	}
	row := "total\t"
	for _, v := range e.Total {
		row += fmt.Sprintf("%.6f\t", v)
	}
	fmt.Fprintln(tw, row)
	_ = tw.Flush()
	fmt.Fprintln(w, "  * uses a price marked unverified in internal/pricing (see --json for each price's status)")
	for _, l := range e.Lines {
		if l.Detail != "" {
			fmt.Fprintf(w, "  %s: %s\n", strings.TrimSpace(l.Component+" "+l.Variant), l.Detail)
		}
	}
	shards := make([]string, len(e.Shards))
	for i, s := range e.Shards {
		shards[i] = fmt.Sprintf("%s: %d", scaleName(e.Scales[i]), s)
	}
	fmt.Fprintf(w, "  provisioned shards sized for the peak: %s\n", strings.Join(shards, ", "))
	if len(e.EventsShards) > 0 && e.EventsShards[len(e.EventsShards)-1] > 0 {
		for i, s := range e.EventsShards {
			shards[i] = fmt.Sprintf("%s: %d", scaleName(e.Scales[i]), s)
		}
		fmt.Fprintf(w, "  events stream's provisioned shards (partitioned by tenant): %s\n", strings.Join(shards, ", "))
	}

	fmt.Fprintln(w, "\ngoals:")
	for _, g := range e.Goals {
		mark := "[x]"
		if !g.Met {
			mark = "[ ]"
		}
		fmt.Fprintf(w, "  %s %s: %s\n", mark, g.Name, g.Detail)
	}

	fmt.Fprintln(w, "\nquotas: load at each scale (% of the default); flags: > 50 % at 100k, needs raise / NOT RAISABLE past the default")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head = "quota\tdefault\tadjustable\t"
	for _, n := range e.Scales {
		head += scaleName(n) + "\t"
	}
	fmt.Fprintln(tw, head+"flags\t")
	for _, q := range e.Quotas {
		def := "unknown"
		if q.Default > 0 {
			def = quantity(q.Default) + " " + q.Unit
		}
		adj := "no"
		if q.Adjustable {
			adj = "yes"
		}
		id := q.ID
		if q.Of != "" {
			id += " (" + q.Of + ")"
		}
		if !q.Measured {
			id += " [not measured]"
		}
		if strings.HasPrefix(q.Status, "unverified") {
			id += " *"
		}
		row := fmt.Sprintf("%s\t%s\t%s\t", id, def, adj)
		for i, v := range q.Load {
			cell := quantity(v)
			if q.Percent != nil {
				cell += fmt.Sprintf(" (%.0f%%)", q.Percent[i])
			}
			row += cell + "\t"
		}
		var flags []string
		for i, f := range q.Flags {
			if f != "" {
				flags = append(flags, scaleName(e.Scales[i])+": "+f)
			}
		}
		fmt.Fprintln(tw, row+strings.Join(flags, ", ")+"\t")
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "  * default unverified (see --json or internal/pricing/quotas.go for the source and status)")
}

func peakOf(r report) float64 {
	if v, ok := r.Extra["peak"]; ok {
		var f float64
		fmt.Sscan(v, &f)
		return f
	}
	return 2
}
