package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"text/tabwriter"

	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/internal/cli"
)

// errReplayFailed: some letters were not replayed (each is reported).
var errReplayFailed = errors.New("some dead letters were not replayed")

// replayResult is one letter's replay, as printed.
type replayResult struct {
	Key     string `json:"key"`
	Outcome string `json:"outcome"` // emitted, duplicate, or failed
	Error   string `json:"error,omitempty"`
}

func deadLettersReplayCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := cli.NewFlags("bowline dead-letters replay", "feed ingest dead letters back through ingest, once the cause is fixed",
		"bowline dead-letters replay --source ingest (--id KEY ... | --all) [--json]\n\n"+
			"Feeds each letter's stored message (its raw bytes) through ingest's checks and Emit again:\n"+
			"the thing is looked up afresh, the payload decoded and the event emitted once per (thing,\n"+
			"event id), so replaying twice, or a message also redelivered, emits it once (outcome\n"+
			"duplicate). A replayed letter is marked (dead-letters --redriven lists it). A message still\n"+
			"refused keeps its letter open and is reported, as is a telemetry letter (not replayable).\n"+
			"--all replays every open ingest letter; --id (repeatable) takes the KEY that\n"+
			"`bowline dead-letters --source ingest` lists, open or not. No MQTT broker is contacted.\n"+
			"Exit status 1 when any letter was not replayed. Environment: BOWLINE_STACK and the\n"+
			"standard AWS SDK variables.")
	source := fs.String("source", "", "where the letters come from; only ingest can be replayed (required)")
	all := fs.Bool("all", false, "replay every open ingest letter")
	var ids []string
	fs.Func("id", "replay the letter with this KEY (repeatable)", func(v string) error {
		if v == "" {
			return errors.New("empty key")
		}
		ids = append(ids, v)
		return nil
	})
	asJSON := fs.Bool("json", false, "print JSON")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	case *source != sourceIngest:
		return fmt.Errorf("%w: --source is %q; replay needs --source ingest (worker letters are redriven: bowline redrive)", cli.ErrUsage, *source)
	case *all == (len(ids) > 0):
		return fmt.Errorf("%w: give --all or --id KEY, not both or neither", cli.ErrUsage)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	stack, err := openApp(ctx, log, nil)
	if err != nil {
		return err
	}
	defer stack.Close()
	// An Ingester behind no event source: Replay uses its registry,
	// decoder and emitter only.
	in, err := stack.Ingest(ingest.Config{Logger: log})
	if err != nil {
		return err
	}
	letters, err := stack.DeadLetters.All(ctx)
	if err != nil {
		return err
	}
	byKey := map[string]deadletter.Letter{}
	var picked []deadletter.Letter
	for _, l := range letters {
		if !fromSource(l, sourceIngest) {
			continue
		}
		byKey[l.Key()] = l
		if *all && l.Open() {
			picked = append(picked, l)
		}
	}
	var results []replayResult
	for _, id := range ids {
		l, ok := byKey[id]
		if !ok {
			results = append(results, replayResult{Key: id, Outcome: "failed", Error: "no ingest dead letter has this key (bowline dead-letters --source ingest --redriven lists them)"})
			continue
		}
		picked = append(picked, l)
	}
	sort.SliceStable(picked, func(i, j int) bool { return picked[i].At.Before(picked[j].At) })
	failed := 0
	for _, r := range results {
		if r.Outcome == "failed" {
			failed++
		}
	}
	for _, l := range picked {
		r := replayResult{Key: l.Key()}
		outcome, err := in.Replay(ctx, l)
		if err == nil {
			err = stack.DeadLetters.MarkReplayed(ctx, l)
		}
		if err != nil {
			r.Outcome, r.Error = "failed", deadletter.Text(err.Error(), 512)
			failed++
		} else {
			r.Outcome = string(outcome)
		}
		results = append(results, r)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"replayed": results, "count": len(results), "failed": failed}); err != nil {
			return err
		}
	} else if err := writeReplay(stdout, results); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%w: %d of %d", errReplayFailed, failed, len(results))
	}
	return nil
}

func writeReplay(w io.Writer, results []replayResult) error {
	if len(results) == 0 {
		_, err := fmt.Fprintln(w, "no ingest dead letters to replay")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tOUTCOME\tERROR")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Key, r.Outcome, dash(oneLine(r.Error, 120)))
	}
	return tw.Flush()
}
