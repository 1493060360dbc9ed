package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/bowline-iot/bowline/cloud/rules"
	"github.com/bowline-iot/bowline/internal/cli"
)

func runRuleErrors(ctx context.Context, args []string) error {
	return ruleErrorsCmd(ctx, args, os.Stdout)
}

func ruleErrorsCmd(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "replay" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			fmt.Fprintln(stdout, "usage: bowline rule-errors replay [--max N] [--dry-run] [--json]")
			return nil
		}
		return fmt.Errorf("%w: want bowline rule-errors replay [--max N] [--dry-run] [--json]", cli.ErrUsage)
	}
	fs := cli.NewFlags("bowline rule-errors replay", "put the topic rules' failed messages back into their streams",
		"bowline rule-errors replay [--max N] [--dry-run] [--json]\n\n"+
			"Reads the rule-errors queue, where a topic rule's error action keeps every message whose\n"+
			"Kinesis action failed (AWS's error action message with the original payload), evaluates\n"+
			"each again with its rule (cloud/rules: the same record format 2 and partition key; the\n"+
			"received time is the replay's) and puts it into the rule's stream: events into the events\n"+
			"stream, batches and v1 telemetry into the telemetry stream. A message leaves the queue only\n"+
			"once its record is in the stream; one that is not an error message of this stack's rules\n"+
			"stays and is listed. Idempotent: the consumers drop a record put twice (events by\n"+
			"(thing, id), telemetry by (thing, outbox, seq)). docs/events-path.md.\n\n"+
			"Environment: BOWLINE_STACK and the standard AWS SDK variables.")
	max := fs.Int("max", 0, "stop after this many messages (0: until the queue is empty)")
	dry := fs.Bool("dry-run", false, "decode and count, put and delete nothing")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := cli.Parse(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	}
	if *max < 0 {
		return fmt.Errorf("%w: --max %d: want 0 or more", cli.ErrUsage, *max)
	}
	stack, err := openApp(ctx, nil, nil)
	if err != nil {
		return err
	}
	defer stack.Close()
	url, err := stack.QueueURL(ctx, stack.Names.RuleErrorsQueue())
	if err != nil {
		return err
	}
	r := &rules.Replayer{
		Queue: stack.SQS, QueueURL: url, Kinesis: stack.Kinesis, Stack: stack.Names.Stack,
		Stream: func(s rules.Spec) string { return s.Stream(stack.Names) }, DryRun: *dry,
	}
	res, err := r.Replay(ctx, *max)
	if *asJSON {
		if werr := writeJSON(stdout, res); werr != nil && err == nil {
			err = werr
		}
		return err
	}
	verb := "put back"
	if *dry {
		verb = "would put back"
	}
	bases := make([]string, 0, len(res.Put))
	for b := range res.Put {
		bases = append(bases, b)
	}
	sort.Strings(bases)
	for _, b := range bases {
		fmt.Fprintf(stdout, "%s: %d %s\n", b, res.Put[b], verb)
	}
	for _, s := range res.Skipped {
		fmt.Fprintf(stdout, "left in the queue: %s\n", s)
	}
	if len(bases) == 0 && len(res.Skipped) == 0 {
		fmt.Fprintln(stdout, "rule-errors is empty")
	}
	return err
}
