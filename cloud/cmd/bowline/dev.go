package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/cloud/dev"
	"github.com/bowline-iot/bowline/internal/cli"
)

// The demo clock of `bowline dev` without flags: pets eat by day, so the
// bowls boot at breakfast (refills come around 07:00), at a speed that
// gives about one meal a minute across four bowls, with a first meal in
// each bowl within seconds (docs/console.md).
const (
	demoStart     = "07:00"
	demoSpeed     = 30.0
	demoSpeedText = "30"
	demoRate      = 10
	demoRateText  = "10"
	demoFirstMeal = 2 * time.Minute
)

func runDev(ctx context.Context, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "fail":
			return devFailCmd(ctx, args[1:], os.Stdout)
		case "tamper":
			return devTamperCmd(ctx, args[1:], os.Stdout)
		}
	}
	fs := cli.NewFlags("bowline dev",
		"run the whole system locally: emulators, broker, provisioning, services, simulated bowls with edge agents, the web console",
		"bowline dev [--real-time] [--bowls N] [--tenants N] [--speed X] [--start HH:MM] [--rate HZ] [--shop-orders N] [--shop-fail-rate R] [--verbose] [--json]\n"+
			"bowline dev fail <shopify|shipping|notify> <status|ok> [--times N]   (another shell; `dev fail --help`)\n"+
			"bowline dev tamper --tenant T --seq N   (another shell: rewrite one stored event; `dev tamper --help`)\n\n"+
			"Starts DynamoDB Local, fauxqs, kinesis-local and an embedded MQTT broker, provisions the\n"+
			"stack, registers every simulated bowl to its tenant, and runs ingest, both relays, the\n"+
			"worker with the cloud subscribers, the record-change consumer, the API with the web console\n"+
			"and fake providers in this process, plus N simulated bowls, each with its own edge agent and\n"+
			"outbox. Prints its start-up steps on stderr, then the console's one-click login URL, then\n"+
			"one line of live figures every --every. Ctrl-C stops all and prints one summary line. When\n"+
			"an emulator dies, it stops all and exits 1 naming it.\n\n"+
			"By default the bowls run on a demo clock: from "+demoStart+" UTC at "+demoSpeedText+"x, "+demoRateText+" Hz, with a\n"+
			"first meal in each bowl at once, so meals, intake records and chains move within the first\n"+
			"minute whatever the time of day. --real-time runs them on the wall clock instead (speed 1,\n"+
			"now, 50 Hz); --speed, --start and --rate override either.\n\n"+
			"Environment: "+api.AddrEnv+" (default "+api.DefaultAddr+"), "+api.TokensEnv+", "+api.WebhookSecretEnv+",\n"+
			api.OpsTokenEnv+" (generated and printed when unset), BOWLINE_STACK (default dev).\n"+
			"Needs ./scripts/setup to have run (./scripts/run does it).")
	bowls := fs.Int("bowls", dev.DefaultBowls, "simulated bowls, each with its own edge agent (0: none)")
	tenants := fs.Int("tenants", dev.DefaultTenants, "tenants the bowls are shared among, round robin (ignored when "+api.TokensEnv+" names them)")
	realTime := fs.Bool("real-time", false, "run the bowls on the wall clock: --speed 1, --start now, --rate 50, no demo meal")
	speed := fs.Float64("speed", demoSpeed, "simulated seconds per real second (1 with --real-time)")
	rate := fs.Int("rate", demoRate, "load cell sample rate in Hz, 1..50 (50 with --real-time)")
	seed := fs.Uint64("seed", 1, "simulation seed: the same seed gives the same bowls")
	duration := fs.Duration("duration", 0, "simulated time the bowls run (0: until stopped)")
	start := fs.String("start", demoStart, "simulated UTC time of day the bowls boot, HH:MM, the latest one not after now (\"now\" with --real-time)")
	every := fs.Duration("every", dev.DefaultEvery, "period of the status line")
	shopOrders := fs.Float64("shop-orders", 6, "demo shop: orders per simulated hour, each paid through the signed webhook (0: no shop)")
	shopFail := fs.Float64("shop-fail-rate", 0.25, "demo shop: share of orders (0..1) whose call to one provider, in turn, is refused (400), so the delivery is dead-lettered")
	dataDir := fs.String("data-dir", "", "directory for the agents' outboxes and the bowls' sockets (default: a temporary one, removed on exit)")
	jsonOut := fs.Bool("json", false, "print the startup report and the status lines as JSON lines")
	verboseReport := fs.Bool("verbose", false, "print the whole startup report: endpoints, resources, tokens, the fakes, each agent, the export lines")
	verbose := fs.Bool("v", false, "log at debug level (default: warnings and errors)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	firstMeal := demoFirstMeal
	if *realTime {
		firstMeal = 0
		if !set["speed"] {
			*speed = 1
		}
		if !set["rate"] {
			*rate = dev.DefaultRateHz
		}
		if !set["start"] {
			*start = "now"
		}
	}
	if *shopOrders < 0 || *shopOrders > 3600 || *shopFail < 0 || *shopFail > 1 {
		return fmt.Errorf("%w: --shop-orders %v, --shop-fail-rate %v: want 0 to 3600 orders per simulated hour and a rate of 0 to 1", cli.ErrUsage, *shopOrders, *shopFail)
	}
	if *bowls < 0 || *tenants < 1 || *speed <= 0 || *every <= 0 {
		return fmt.Errorf("%w: --bowls %d, --tenants %d, --speed %v, --every %v: want bowls >= 0, tenants >= 1, speed and every > 0",
			cli.ErrUsage, *bowls, *tenants, *speed, *every)
	}
	var startAt time.Time
	if *start != "now" && *start != "" {
		hm, err := time.Parse("15:04", *start)
		if err != nil {
			return fmt.Errorf("%w: --start %q: want HH:MM (UTC) or now", cli.ErrUsage, *start)
		}
		now := time.Now().UTC()
		y, m, d := now.Date()
		startAt = time.Date(y, m, d, hm.Hour(), hm.Minute(), 0, 0, time.UTC)
		if startAt.After(now) {
			startAt = startAt.AddDate(0, 0, -1) // never ahead of the wall clock
		}
	}
	settings, err := api.SettingsFromEnv()
	if err != nil {
		return fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	cfg := dev.Config{
		Bowls: *bowls, NoBowls: *bowls == 0, Seed: *seed, Speed: *speed, RateHz: *rate, Duration: *duration, Start: startAt,
		FirstMealAfter: firstMeal, DataDir: *dataDir, APIAddr: settings.Addr, Settings: settings, Every: *every,
		JSON: *jsonOut, Verbose: *verboseReport, Out: os.Stdout, Progress: os.Stderr, Logger: log,
		ShopOrdersPerHour: *shopOrders, ShopFailRate: *shopFail,
	}
	if len(settings.Tokens) == 0 {
		cfg.Tenants = dev.DefaultTenantNames(*tenants)
	}
	return dev.Run(ctx, cfg)
}
