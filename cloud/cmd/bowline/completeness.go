package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
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
			"bowline completeness anchor (--tenant T ... | --all) [--day YYYY-MM-DD] [--days N] [--thing X ...] [--json]\n\n"+
			"States what became of a bowl's samples on one UTC day of the bowl's (gateway's)\n"+
			"clock: the seqs the gateway assigned (each one a sample it acknowledged to the MCU),\n"+
			"those durable in the telemetry stream, those the gateway dropped unsent and why\n"+
			"(disk_cap, ttl), readings the MCU refused with its ring full, the seqs missing (holes\n"+
			"nobody accounted for) and the resent duplicates the consumer collapsed. The counts come\n"+
			"from the consumer's rollup rows and the tenant's event log; rollups live 3 days, so\n"+
			"older days read as empty. Exit status 2 for a thing not in the device registry.\n"+
			"`anchor` states a tenant's day (default: yesterday, UTC) for every bowl its event log\n"+
			"names and every --thing, and emits it into the tenant's hash chain as\n"+
			"audit.completeness_stated, once per tenant and day; the stack runs it daily for\n"+
			"--all at 01:00 UTC, after the day's rollups are written (`anchor --help`).\n"+
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

// anchorPart is the part `bowline completeness anchor` records its AWS
// calls under (docs/iam.md): the daily job's role, CompletenessRole, not
// the operator's `bowline completeness` reads.
const anchorPart = "completeness-anchor"

// maxCatchUpDays bounds --days, and the daily job passes it
// (deploy/cloudformation/bowline.yaml, CompletenessTaskDefinition;
// TestCompletenessScheduleCatchesUpAllItCan): a rollup row lives
// durable.RollupTTL (3 days) after its window, so once yesterday is
// whole (00:35 UTC) the day before yesterday still is and the day before
// it has begun to expire (completeness.OldestWhole). A day already stated
// costs no read: Anchor reads the tenant's log once per run whatever the
// days, and finds the stated ones in it.
const maxCatchUpDays = int(durable.RollupTTL/(24*time.Hour)) - 1

// completenessAnchorCmd runs `bowline completeness anchor (--tenant T ... |
// --all) [--day D] [--days N] [--thing X ...] [--json]`.
func completenessAnchorCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := cli.NewFlags("bowline completeness anchor", "state a tenant's day of telemetry in its hash chain",
		"bowline completeness anchor (--tenant T ... | --all) [--day YYYY-MM-DD] [--days N] [--thing X ...] [--json]\n\n"+
			"Emits audit.completeness_stated for each tenant and day: per bowl the counts of\n"+
			"`bowline completeness` and a digest, with the idempotency key\n"+
			"completeness/<tenant>/<day>, so a day already stated is skipped and says so.\n"+
			"A day of more bowls than one event holds (about 800) is stated in parts,\n"+
			"part k of n each with the whole day's digest. --days 2 also states the day\n"+
			"before --day if a missed run left it unstated (the daily job runs so); a day\n"+
			"already stated costs no read but the tenant's log, read once a run. A day whose\n"+
			"rollups have begun to expire (3 days after it: before the day before yesterday)\n"+
			"is refused, its counts would be wrong; days a tenant's chain left unstated\n"+
			"before then are lost, and the runs of the day they fall out of reach log them at\n"+
			"level=ERROR (msg=completeness_days_lost, tenant, from, to, days).\n"+
			"A tenant that fails is logged at level=ERROR and the others go on; the exit\n"+
			"status is then 1, naming the tenants. Exit status 2 for a tenant with no chain\n"+
			"or a day refused.\n"+
			"docs/completeness.md has the rules.")
	var tenants multi
	fs.Var(&tenants, "tenant", "a tenant whose day to state (repeatable; or --all)")
	all := fs.Bool("all", false, "every tenant with a chain head")
	dayFlag := fs.String("day", "", "the last UTC day to state on the bowls' clock, YYYY-MM-DD (default: yesterday's UTC date on this machine's clock)")
	days := fs.Int("days", 1, fmt.Sprintf("how many days to state, ending at --day: 1 to %d (days already stated are skipped)", maxCatchUpDays))
	var things multi
	fs.Var(&things, "thing", "a bowl to state even if its tenant's log names none of its events (repeatable; with one --tenant)")
	asJSON := fs.Bool("json", false, "print each tenant's day as JSON")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	case len(tenants) == 0 && !*all:
		return fmt.Errorf("%w: --tenant or --all is required", cli.ErrUsage)
	case len(tenants) > 0 && *all:
		return fmt.Errorf("%w: --tenant and --all exclude each other", cli.ErrUsage)
	case len(things) > 0 && len(tenants) != 1:
		return fmt.Errorf("%w: --thing needs exactly one --tenant", cli.ErrUsage)
	case *days < 1 || *days > maxCatchUpDays:
		return fmt.Errorf("%w: --days %d: want 1 to %d (older days' rollups have begun to expire)", cli.ErrUsage, *days, maxCatchUpDays)
	}
	for _, th := range things {
		if err := wire.CheckName("--thing", th); err != nil {
			return fmt.Errorf("%w: %v", cli.ErrUsage, err)
		}
	}
	now := time.Now()
	last, err := parseDay(*dayFlag, now.UTC().Truncate(24*time.Hour).Add(-24*time.Hour))
	if err != nil {
		return err
	}
	var span []time.Time
	for i := *days - 1; i >= 0; i-- {
		span = append(span, last.Add(-time.Duration(i)*24*time.Hour))
	}
	oldest := completeness.OldestWhole(now)
	if err := completeness.CheckDays(span, oldest); err != nil {
		return fmt.Errorf("%w: --day %s --days %d: %v", cli.ErrUsage, last.Format(time.DateOnly), *days, err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	stack, err := openPart(ctx, anchorPart, log, nil)
	if err != nil {
		return err
	}
	defer stack.Close()
	verifier := engine.NewVerifier(stack.DynamoDB, stack.Names.EventsTable(), 500)
	heads, err := verifier.HeadTenants(ctx)
	if err != nil {
		return err
	}
	if *all {
		tenants = heads
	} else if unknown := slices.DeleteFunc(slices.Clone(tenants), func(t string) bool { return slices.Contains(heads, t) }); len(unknown) > 0 {
		return unknownTenantError(ctx, verifier, stack.Names.Stack, unknown)
	}
	tables := completeness.Tables{Telemetry: stack.Names.TelemetryTable(), Events: stack.Names.EventsTable()}
	var failed []string
	var stated, already, lost int
	for _, tn := range tenants {
		rs, gone, err := completeness.Anchor(ctx, stack.DynamoDB, tables, stack.Engine, tn, things, span, oldest)
		if gone.Days > 0 {
			// Nothing to retry: the alarm on level=ERROR tells the operator
			// (CompletenessErrorsAlarm; docs/completeness.md, "The daily job").
			log.Error("completeness_days_lost", "tenant", tn, "from", gone.From.Format(time.DateOnly), "to", gone.To.Format(time.DateOnly), "days", gone.Days)
			lost += gone.Days
		}
		for _, r := range rs {
			if r.Already {
				already++
			} else {
				stated++
			}
			if err := printAnchored(stdout, tn, r, *asJSON); err != nil {
				return err
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			log.Error("completeness anchor failed", "tenant", tn, "err", err)
			failed = append(failed, tn)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d tenants not stated: %s (see the errors above)", len(failed), len(tenants), listSome(failed, 20))
	}
	// The job's heartbeat (deploy/cloudformation/bowline.yaml,
	// CompletenessNotRunAlarm): logged only when every tenant is stated.
	log.Info("completeness_anchored", "tenants", len(tenants), "days", len(span), "stated", stated, "already", already, "lost", lost)
	return nil
}

// printAnchored writes what Anchor did for one tenant's day.
func printAnchored(w io.Writer, tenant string, r completeness.Result, asJSON bool) error {
	if asJSON {
		out := struct {
			Tenant  string `json:"tenant"`
			Already bool   `json:"already_stated,omitempty"`
			Event   string `json:"event_id,omitempty"`
			Seq     uint64 `json:"seq,omitempty"`
			Events  int    `json:"events_written"`
			catalog.CompletenessStated
		}{Tenant: tenant, Already: r.Already, Events: len(r.Emitted), CompletenessStated: r.Statement}
		out.Parts = r.Parts
		if len(r.Emitted) > 0 {
			out.Event, out.Seq = r.Emitted[0].ID, r.Emitted[0].Seq
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	if r.Already {
		_, err := fmt.Fprintf(w, "already stated: tenant %s, %s (%s, digest %s); nothing written\n", tenant, r.Statement.Day, nOf(r.Parts, "part"), r.Statement.Digest)
		return err
	}
	ids := make([]string, 0, len(r.Emitted))
	for _, e := range r.Emitted {
		ids = append(ids, fmt.Sprintf("%s (seq %d)", e.ID, e.Seq))
	}
	_, err := fmt.Fprintf(w, "stated: tenant %s, %s UTC (bowl clock), %s in %s, digest %s: %s\n",
		tenant, r.Statement.Day, nOf(len(r.Statement.Things), "bowl"), nOf(r.Parts, "event"), r.Statement.Digest, strings.Join(ids, ", "))
	return err
}

// nOf writes n and the noun, plural unless n is 1.
func nOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
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
