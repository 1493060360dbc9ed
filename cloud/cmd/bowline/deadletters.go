package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/internal/cli"
)

func runDeadLetters(ctx context.Context, args []string) error {
	return deadLettersCmd(ctx, args, os.Stdout)
}

func deadLettersCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := cli.NewFlags("bowline dead-letters", "list dead letters: work nobody did",
		"bowline dead-letters [--tenant T] [--poison] [--redriven] [--json]\n\n"+
			"Lists open dead letters (a DURABLE subscription that went dead for an event) and poison\n"+
			"pills (message bodies that were not events). Environment: BOWLINE_STACK and the standard\n"+
			"AWS SDK variables.")
	tenant := fs.String("tenant", "", "only this tenant's letters")
	poison := fs.Bool("poison", false, "only poison pills")
	redriven := fs.Bool("redriven", false, "include letters already redriven")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	}
	if *tenant != "" && *poison {
		return fmt.Errorf("%w: --tenant and --poison exclude each other (poison pills have no tenant)", cli.ErrUsage)
	}
	stack, err := openApp(ctx, nil, nil)
	if err != nil {
		return err
	}
	defer stack.Close()
	store := stack.DeadLetters
	var letters []deadletter.Letter
	switch {
	case *tenant != "":
		letters, err = store.Tenant(ctx, *tenant)
	case *poison:
		letters, err = store.Poison(ctx)
	default:
		letters, err = store.All(ctx)
	}
	if err != nil {
		return err
	}
	shown := []deadletter.Letter{}
	for _, l := range letters {
		if l.Open() || *redriven {
			shown = append(shown, l)
		}
	}
	sort.SliceStable(shown, func(i, j int) bool { return shown[i].At.Before(shown[j].At) })
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"dead_letters": shown, "count": len(shown)})
	}
	return writeLetters(stdout, shown)
}

func writeLetters(w io.Writer, letters []deadletter.Letter) error {
	if len(letters) == 0 {
		_, err := fmt.Fprintln(w, "no dead letters")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\tTENANT\tEVENT\tTYPE\tSUBSCRIPTION\tRECEIVES\tSTATE\tERROR")
	for _, l := range letters {
		state := "open"
		if !l.Open() {
			state = "redriven"
		}
		tenant, event, sub := l.Tenant, l.EventID, l.Subscription
		if l.Poison {
			tenant, event, sub, state = "-", "msg:"+l.MessageID, "-", "poison"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", l.At.UTC().Format(time.RFC3339), tenant, event,
			dash(l.EventType), sub, l.ReceiveCount, state, oneLine(l.Error, 80))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		return s[:max-3] + "..."
	}
	return s
}
