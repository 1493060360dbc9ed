package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/cloud/dev"
	"github.com/bowline-iot/bowline/internal/cli"
)

func runDev(ctx context.Context, args []string) error {
	fs := cli.NewFlags("bowline dev",
		"run the whole system locally: emulators, broker, provisioning, services, simulated bowls with edge agents",
		"bowline dev [--bowls N] [--tenants N] [--speed X] [--start HH:MM] [--every 5s] [--data-dir DIR] [--json]\n\n"+
			"Starts DynamoDB Local, fauxqs, kinesis-local and an embedded MQTT broker, provisions the\n"+
			"stack, registers every simulated bowl to its tenant, and runs ingest, both relays, the\n"+
			"worker with the cloud subscribers, the record-change consumer, the API and fake providers\n"+
			"in this process, plus N simulated bowls, each with its own edge agent and outbox. Prints\n"+
			"where everything listens, then one line of live figures every --every. Ctrl-C stops all.\n\n"+
			"Environment: "+api.AddrEnv+" (default "+api.DefaultAddr+"), "+api.TokensEnv+", "+api.WebhookSecretEnv+",\n"+
			api.OpsTokenEnv+" (generated and printed when unset), BOWLINE_STACK (default dev).\n"+
			"Needs ./scripts/setup to have run (./scripts/run does it).")
	bowls := fs.Int("bowls", dev.DefaultBowls, "simulated bowls, each with its own edge agent (0: none)")
	tenants := fs.Int("tenants", dev.DefaultTenants, "tenants the bowls are shared among, round robin (ignored when "+api.TokensEnv+" names them)")
	speed := fs.Float64("speed", dev.DefaultSpeed, "simulated seconds per real second")
	rate := fs.Int("rate", dev.DefaultRateHz, "load cell sample rate in Hz (1..50)")
	seed := fs.Uint64("seed", 1, "simulation seed: the same seed gives the same bowls")
	duration := fs.Duration("duration", 0, "simulated time the bowls run (0: until stopped)")
	start := fs.String("start", "", "simulated UTC time of day the bowls boot, HH:MM, the latest one not after now (default: now); pets eat by day, so\n--start 07:00 --speed 120 shows meals within a minute")
	every := fs.Duration("every", dev.DefaultEvery, "period of the status line")
	dataDir := fs.String("data-dir", "", "directory for the agents' outboxes and the bowls' sockets (default: a temporary one, removed on exit)")
	jsonOut := fs.Bool("json", false, "print the startup report and the status lines as JSON lines")
	verbose := fs.Bool("v", false, "log at debug level (default: warnings and errors)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	}
	if *bowls < 0 || *tenants < 1 || *speed <= 0 || *every <= 0 {
		return fmt.Errorf("%w: --bowls %d, --tenants %d, --speed %v, --every %v: want bowls >= 0, tenants >= 1, speed and every > 0",
			cli.ErrUsage, *bowls, *tenants, *speed, *every)
	}
	var startAt time.Time
	if *start != "" {
		hm, err := time.Parse("15:04", *start)
		if err != nil {
			return fmt.Errorf("%w: --start %q: want HH:MM (UTC)", cli.ErrUsage, *start)
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
		DataDir: *dataDir, APIAddr: settings.Addr, Settings: settings, Every: *every, JSON: *jsonOut,
		Out: os.Stdout, Logger: log,
	}
	if len(settings.Tokens) == 0 {
		cfg.Tenants = dev.DefaultTenantNames(*tenants)
	}
	return dev.Run(ctx, cfg)
}
