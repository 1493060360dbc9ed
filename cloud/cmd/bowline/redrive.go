package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/bowline-iot/bowline/engine/redrive"
	"github.com/bowline-iot/bowline/internal/cli"
)

func runRedrive(ctx context.Context, args []string) error { return redriveCmd(ctx, args, os.Stdout) }

// eventIDs collects repeated --event flags.
type eventIDs []string

func (e *eventIDs) String() string { return strings.Join(*e, ",") }
func (e *eventIDs) Set(v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("empty event id")
	}
	*e = append(*e, v)
	return nil
}

func redriveCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := cli.NewFlags("bowline redrive", "move dead-lettered events from events-dlq.fifo back to events.fifo",
		"bowline redrive (--event ID [--event ID]... | --all) [--dry-run] [--json]\n\n"+
			"For each selected message in the DLQ: release its dead inbox rows so the fixed handlers\n"+
			"can claim them again, send it back with the same group and a fresh deduplication id, and\n"+
			"delete it from the DLQ. An event queued behind others of its tenant is reached by walking\n"+
			"the group (the others keep their order). Prints what moved and what was skipped and why;\n"+
			"exits 1 naming the ids it did not find.\n"+
			"Environment: BOWLINE_STACK and the standard AWS SDK variables.")
	var ids eventIDs
	fs.Var(&ids, "event", "event id to redrive (repeatable)")
	all := fs.Bool("all", false, "redrive every message in the DLQ")
	dryRun := fs.Bool("dry-run", false, "report what would move; change nothing")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	}
	if *all == (len(ids) > 0) {
		return fmt.Errorf("%w: give --all or one or more --event IDs, not both or neither", cli.ErrUsage)
	}
	stack, err := openApp(ctx, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), nil)
	if err != nil {
		return err
	}
	defer stack.Close()
	r, err := stack.Redriver(ctx, nil)
	if err != nil {
		return err
	}
	res, err := r.Run(ctx, redrive.Options{EventIDs: ids, All: *all, DryRun: *dryRun})
	if err != nil {
		return err
	}
	if err := printRedrive(stdout, res, *asJSON); err != nil {
		return err
	}
	if len(res.NotFound) > 0 {
		return fmt.Errorf("%w: %s", errNotInDLQ, strings.Join(res.NotFound, ", "))
	}
	return nil
}

// errNotInDLQ: an event asked for is not in the DLQ (exit status 1).
var errNotInDLQ = errors.New("not in the dead-letter queue")

func printRedrive(stdout io.Writer, res redrive.Result, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	verb := "moved"
	if res.DryRun {
		verb = "would move"
	}
	for _, it := range res.Moved {
		fmt.Fprintf(stdout, "%s %s (tenant %s, %s) released: %s", verb, it.EventID, it.Tenant, it.Type, dash(strings.Join(it.Released, ",")))
		if it.Reason != "" {
			fmt.Fprintf(stdout, " (%s)", it.Reason)
		}
		fmt.Fprintln(stdout)
	}
	for _, it := range res.Skipped {
		what := it.EventID
		if what == "" {
			what = "message " + it.MessageID
		}
		fmt.Fprintf(stdout, "skipped %s: %s\n", what, it.Reason)
	}
	for _, g := range res.Walked {
		fmt.Fprintf(stdout, "walked group %s: its other messages are back in order under new message ids\n", g)
	}
	why := "not in the DLQ"
	if res.DryRun {
		why = "not in the DLQ, or behind held messages of its group (a dry run does not walk groups)"
	}
	for _, id := range res.NotFound {
		fmt.Fprintf(stdout, "not found %s: %s\n", id, why)
	}
	fmt.Fprintf(stdout, "%d %s, %d skipped, %d not found\n", len(res.Moved), verb, len(res.Skipped), len(res.NotFound))
	return nil
}
