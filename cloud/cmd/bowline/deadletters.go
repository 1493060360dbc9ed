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

	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/internal/cli"
)

func runDeadLetters(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "replay" {
		return deadLettersReplayCmd(ctx, args[1:], os.Stdout)
	}
	return deadLettersCmd(ctx, args, os.Stdout)
}

// Sources of dead letters (--source).
const (
	sourceIngest = "ingest" // rejected device messages (cloud/ingest)
	sourceWorker = "worker" // everything else: dead subscriptions, undecodable queue messages
)

// fromSource reports whether l was written by source ("" matches all).
func fromSource(l deadletter.Letter, source string) bool {
	switch source {
	case sourceIngest:
		return l.Subscription == ingest.LetterSubscription
	case sourceWorker:
		return l.Subscription != ingest.LetterSubscription
	}
	return true
}

func checkSource(source string) error {
	switch source {
	case "", sourceIngest, sourceWorker:
		return nil
	}
	return fmt.Errorf("%w: --source is %q; want ingest or worker", cli.ErrUsage, source)
}

// letterJSON is a letter as --json prints it: with the key replay --id takes.
type letterJSON struct {
	Key string `json:"key"`
	deadletter.Letter
}

func deadLettersCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := cli.NewFlags("bowline dead-letters", "list dead letters: work nobody did",
		"bowline dead-letters [--tenant T] [--poison] [--source ingest|worker] [--redriven] [--json]\n"+
			"bowline dead-letters replay --source ingest (--id KEY ... | --all) [--json]\n\n"+
			"Lists open dead letters (a DURABLE subscription that went dead for an event, or a device\n"+
			"message ingest rejected) and poison pills (message bodies that were not events). --source\n"+
			"ingest lists only ingest's; their KEY is what replay --id takes. Letters expire after 14\n"+
			"days (docs/dead-letters.md). `replay --help` explains replay. A --tenant with no chain\n"+
			"head and no letters is unknown: exit 2, naming the known tenants. Environment:\n"+
			"BOWLINE_STACK and the standard AWS SDK variables.")
	tenant := fs.String("tenant", "", "only this tenant's letters")
	poison := fs.Bool("poison", false, "only poison pills")
	redriven := fs.Bool("redriven", false, "include letters already redriven or replayed")
	source := fs.String("source", "", "only letters from ingest (rejected device messages) or worker (the rest)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	}
	if err := checkSource(*source); err != nil {
		return err
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
	if *tenant != "" && len(letters) == 0 {
		// No letters: say so only of a tenant that exists, or a typo
		// would read as "no dead letters".
		// Embedding the interface hides BatchGetItem, so the head is one
		// GetItem, which OperatorRole grants (deploy/cloudformation).
		v := engine.NewVerifier(struct{ engine.DynamoDB }{stack.DynamoDB}, stack.Names.EventsTable(), 1)
		heads, err := v.Heads(ctx, []string{*tenant})
		if err != nil {
			return err
		}
		if !heads[*tenant].Found {
			return unknownTenantError(ctx, v, stack.Names.Stack, []string{*tenant})
		}
	}
	shown := []deadletter.Letter{}
	for _, l := range letters {
		if (l.Open() || *redriven) && fromSource(l, *source) {
			shown = append(shown, l)
		}
	}
	sort.SliceStable(shown, func(i, j int) bool { return shown[i].At.Before(shown[j].At) })
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"dead_letters": lettersJSON(shown), "count": len(shown)})
	}
	return writeLetters(stdout, shown, *source == sourceIngest)
}

func lettersJSON(letters []deadletter.Letter) []letterJSON {
	out := make([]letterJSON, len(letters))
	for i, l := range letters {
		out[i] = letterJSON{Key: l.Key(), Letter: l}
	}
	return out
}

func writeLetters(w io.Writer, letters []deadletter.Letter, keys bool) error {
	if len(letters) == 0 {
		_, err := fmt.Fprintln(w, "no dead letters")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "AT\tTENANT\tEVENT\tTYPE\tSUBSCRIPTION\tRECEIVES\tSTATE\tERROR"
	if keys {
		head += "\tKEY"
	}
	fmt.Fprintln(tw, head)
	for _, l := range letters {
		state := "open"
		if !l.Open() {
			state = "redriven"
		}
		tenant, event, sub := l.Tenant, l.EventID, l.Subscription
		if l.Poison {
			tenant, event, sub, state = "-", "msg:"+l.MessageID, "-", "poison"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s", l.At.UTC().Format(time.RFC3339), tenant, event,
			dash(l.EventType), sub, l.ReceiveCount, state, oneLine(l.Error, 80))
		if keys {
			fmt.Fprintf(tw, "\t%s", l.Key())
		}
		fmt.Fprintln(tw)
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
