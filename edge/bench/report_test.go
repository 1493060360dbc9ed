package main

import (
	"strings"
	"testing"
)

func TestPrintTables(t *testing.T) {
	r := result{
		Params:    quickParams(1),
		Mosquitto: "2.0.11",
		Durable:   []durableResult{{RecordsPerDeliver: 1, SamplesPerDeliver: 50, SamplesPerSec: 150_000}, {RecordsPerDeliver: 64, SamplesPerDeliver: 3200, SamplesPerSec: 600_000}},
		Live: []liveResult{
			{Subject: "bowline-edge", AckedPerSec: 500_000, CloudPerSec: 200_000},
			{Subject: "mosquitto (autosave default)", AckedPerSec: 900_000, CloudPerSec: 700_000, Lost: 70_000},
		},
		Backlog: []backlogResult{{Subject: "bowline-edge", Samples: 1_000_000, FillPerSec: 700_000,
			WithBacklog: memory{VmRSS: 27 * 1024, RssAnon: 9 * 1024, RssFile: 18 * 1024}}},
		Kill: []killResult{
			{Subject: "bowline-edge", Kills: 5, tally: tally{Pushed: 1200, Acked: 1200, AtCloud: 1200}},
			{Subject: "mosquitto (autosave default)", Kills: 5, tally: tally{Pushed: 1220, Acked: 1220, AtCloud: 800, Lost: 420}},
		},
	}
	var b strings.Builder
	printTables(&b, r)
	out := b.String()
	for _, want := range []string{
		"3.50x",       // mosquitto's cloud rate over the agent's
		"600.0k",      // best durable rate
		"RSS < 40 MB", // the target line
		"VmRSS 27.0 MB (RssAnon 9.0, RssFile 18.0)  [met]",
		"mosquitto (autosave default) lost 420 of 1220",
		"zero loss where mosquitto loses  [met]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q; got\n%s", want, out)
		}
	}
}
