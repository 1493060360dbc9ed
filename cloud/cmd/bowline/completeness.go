package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/completeness"
	"github.com/bowline-iot/bowline/cloud/devices"
	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/cli"
)

// completenessSummary is the one-line description of `bowline completeness`.
const completenessSummary = "account for a bowl's samples of one day: assigned, durable, dropped, missing, duplicates"

func runCompleteness(ctx context.Context, args []string) error {
	return completenessCmd(ctx, args, os.Stdout)
}

// completenessCmd runs `bowline completeness --thing T [--day D] [--json]`,
// or `bowline completeness anchor ...` (completenessAnchorCmd).
func completenessCmd(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) > 0 && args[0] == "anchor" {
		return completenessAnchorCmd(ctx, args[1:], stdout)
	}
	fs := cli.NewFlags("bowline completeness", completenessSummary,
		"bowline completeness --thing T [--day YYYY-MM-DD] [--json]\n"+
			"bowline completeness anchor --tenant T [--day YYYY-MM-DD] [--thing X ...] [--json]\n\n"+
			"States what became of a bowl's samples on one UTC day of the bowl's (gateway's)\n"+
			"clock: the seqs the gateway assigned (each one a sample it acknowledged to the MCU),\n"+
			"those durable in the telemetry stream, those the gateway dropped unsent and why\n"+
			"(disk_cap, ttl), readings the MCU refused with its ring full, the seqs missing (holes\n"+
			"nobody accounted for) and the resent duplicates the consumer collapsed. The counts come\n"+
			"from the consumer's rollup rows and the tenant's event log; rollups live 3 days, so\n"+
			"older days read as empty. Exit status 2 for a thing not in the device registry.\n"+
			"`anchor` states a tenant's day (default: yesterday, UTC) for every bowl its event log\n"+
			"names and every --thing, and emits it into the tenant's hash chain as\n"+
			"audit.completeness_stated, once per tenant and day; run it daily, after the day's\n"+
			"rollups are written (an hour after midnight on the bowls' clock is enough).\n"+
			"docs/completeness.md has the rules.")
	thing := fs.String("thing", "", "the bowl (thing) to account for (required)")
	dayFlag := fs.String("day", "", "the UTC day on the bowl's clock, YYYY-MM-DD (default: today's UTC date on this machine's clock)")
	asJSON := fs.Bool("json", false, "print the statement as JSON")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	}
	if *thing == "" {
		return fmt.Errorf("%w: --thing is required", cli.ErrUsage)
	}
	if err := wire.CheckName("--thing", *thing); err != nil {
		return fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	day, err := parseDay(*dayFlag, time.Now().UTC().Truncate(24*time.Hour))
	if err != nil {
		return err
	}
	stack, err := openApp(ctx, nil, nil)
	if err != nil {
		return err
	}
	defer stack.Close()
	reg, err := stack.Devices()
	if err != nil {
		return err
	}
	dev, err := reg.Lookup(ctx, *thing)
	if errors.Is(err, devices.ErrUnknownDevice) {
		return fmt.Errorf("%w: unknown thing %q: not in the device registry (`bowline devices register`)", cli.ErrUsage, *thing)
	}
	if err != nil {
		return err
	}
	st, err := completeness.Day(ctx, stack.DynamoDB, completeness.Tables{Telemetry: stack.Names.TelemetryTable(), Events: stack.Names.EventsTable()}, dev.Tenant, *thing, day)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Tenant string `json:"tenant"`
			durable.Statement
			Digest string `json:"digest"`
		}{dev.Tenant, st, st.Digest()})
	}
	printStatement(stdout, dev.Tenant, st)
	return nil
}

// printStatement writes st as the human table.
func printStatement(w io.Writer, tenant string, st durable.Statement) {
	fmt.Fprintf(w, "%s (tenant %s), %s UTC, bowl clock\n", st.Thing, tenant, st.Day)
	fmt.Fprintf(w, "  assigned (acked to the MCU)  %d\n", st.Assigned)
	fmt.Fprintf(w, "  durable in the stream        %d\n", st.Durable)
	reasons := make([]string, 0, len(st.Dropped))
	for r, n := range st.Dropped {
		reasons = append(reasons, fmt.Sprintf("%s %d", r, n))
	}
	sort.Strings(reasons)
	drops := ""
	if len(reasons) > 0 {
		drops = " (" + strings.Join(reasons, ", ") + ")"
	}
	fmt.Fprintf(w, "  dropped at the gateway       %d%s\n", st.DroppedTotal, drops)
	fmt.Fprintf(w, "  missing (holes)              %d\n", st.Missing)
	fmt.Fprintf(w, "  duplicates collapsed         %d\n", st.Duplicates)
	fmt.Fprintf(w, "  refused by the MCU (ring)    %d (never assigned a seq)\n", st.RingRefused)
	if st.Partial {
		fmt.Fprintln(w, "  partial: some rollup rows predate seq accounting; assigned and missing undercount")
	}
	fmt.Fprintf(w, "  digest %s\n", st.Digest())
}

// completenessAnchorCmd runs `bowline completeness anchor --tenant T [--day D]
// [--thing X ...] [--json]`.
func completenessAnchorCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := cli.NewFlags("bowline completeness anchor", "state a tenant's day of telemetry in its hash chain",
		"bowline completeness anchor --tenant T [--day YYYY-MM-DD] [--thing X ...] [--json]\n\n"+
			"Emits audit.completeness_stated for the tenant and day: per bowl the counts of\n"+
			"`bowline completeness` and a digest, with the idempotency key\n"+
			"completeness/<tenant>/<day>, so a second run writes nothing and says so.\n"+
			"Exit status 2 for a tenant with no chain.")
	tenant := fs.String("tenant", "", "the tenant whose day to state (required)")
	dayFlag := fs.String("day", "", "the UTC day on the bowls' clock, YYYY-MM-DD (default: yesterday's UTC date on this machine's clock)")
	var things multi
	fs.Var(&things, "thing", "a bowl to state even if its tenant's log names none of its events (repeatable)")
	asJSON := fs.Bool("json", false, "print the statement as JSON")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	case *tenant == "":
		return fmt.Errorf("%w: --tenant is required", cli.ErrUsage)
	case !engine.ValidTenant(*tenant):
		return fmt.Errorf("%w: --tenant %q: not a valid tenant name", cli.ErrUsage, *tenant)
	}
	for _, th := range things {
		if err := wire.CheckName("--thing", th); err != nil {
			return fmt.Errorf("%w: %v", cli.ErrUsage, err)
		}
	}
	day, err := parseDay(*dayFlag, time.Now().UTC().Truncate(24*time.Hour).Add(-24*time.Hour))
	if err != nil {
		return err
	}
	stack, err := openApp(ctx, nil, nil)
	if err != nil {
		return err
	}
	defer stack.Close()
	verifier := engine.NewVerifier(stack.DynamoDB, stack.Names.EventsTable(), 500)
	heads, err := verifier.HeadTenants(ctx)
	if err != nil {
		return err
	}
	if !slices.Contains(heads, *tenant) {
		return unknownTenantError(ctx, verifier, stack.Names.Stack, []string{*tenant})
	}
	tables := completeness.Tables{Telemetry: stack.Names.TelemetryTable(), Events: stack.Names.EventsTable()}
	st, env, err := completeness.Anchor(ctx, stack.DynamoDB, tables, stack.Engine, *tenant, things, day)
	var dup *engine.DuplicateError
	switch {
	case errors.As(err, &dup):
		fmt.Fprintf(stdout, "already stated: tenant %s, %s is event %s; nothing written\n", *tenant, st.Day, dup.EventID)
		return nil
	case err != nil:
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Tenant string `json:"tenant"`
			Event  string `json:"event_id"`
			Seq    uint64 `json:"seq"`
			catalog.CompletenessStated
		}{*tenant, env.ID, env.Seq, st})
	}
	fmt.Fprintf(stdout, "stated: tenant %s, %s UTC (bowl clock), %d bowls, digest %s: event %s, seq %d\n", *tenant, st.Day, len(st.Things), st.Digest, env.ID, env.Seq)
	return nil
}

// parseDay reads --day (YYYY-MM-DD, a UTC day), or returns def when the
// flag is empty; a bad value is a usage error naming it.
func parseDay(flag string, def time.Time) (time.Time, error) {
	if flag == "" {
		return def, nil
	}
	d, err := time.Parse(time.DateOnly, flag)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: --day %q: want YYYY-MM-DD", cli.ErrUsage, flag)
	}
	return d, nil
}
