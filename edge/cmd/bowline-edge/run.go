package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/bowline-iot/bowline/edge/agent"
	"github.com/bowline-iot/bowline/edge/config"
	"github.com/bowline-iot/bowline/edge/outbox"
	"github.com/bowline-iot/bowline/internal/cli"
)

const runSummary = "run the gateway agent: bowl links in, bbolt outbox, MQTT out"

const runUsage = `bowline-edge run [--config FILE] [flags]

Reads the bowls' MCU frames (serial, pty or unix socket), makes every reading
durable in a bbolt outbox before the MCU is acknowledged, detects meals,
refills, food-low and empty on the gateway, and forwards over MQTT (QoS 1):
events at once, then telemetry.

Events (--events-rule): with a rule, by AWS IoT Basic Ingest to
$aws/rules/<rule>/dt/bowline/<tenant>/<thing>/events, which puts them into the
cloud's events stream (e.g. bowline_prod_events); without one (v1), through the
broker on dt/bowline/<tenant>/<thing>/events, accepted by a cloud until its
events cut-over. Either way an event is removed on its PUBACK.

Telemetry (--telemetry-wire):
  v2 (default)  every --telemetry-batch-interval (1m), one binary batch of
                every bowl's telemetry to the rule --telemetry-rule through
                AWS IoT Basic Ingest: $aws/rules/<rule>/dt/bowline/<tenant>/<gateway>/batch.
                Telemetry stays in the outbox until the cloud acknowledges
                it on cmd/bowline/<tenant>/<gateway>/ack; what is not
                acknowledged --telemetry-ack-timeout (45m) after it was
                sent is sent again (the cloud acks every 30m, so up to
                about 31m of telemetry waits in the outbox). --telemetry-rule is required.
  v1            for a cloud without the telemetry stream: JSON per bowl to
                dt/bowline/<tenant>/<thing>/telemetry, removed on PUBACK.

The config file is JSON with the same options as the flags (flags win):
  {"tenant":"t1","gateway":"gw-1","broker":"ssl://example:8883",
   "tls":{"ca":"ca.pem","cert":"gw.pem","key":"gw.key"},
   "inputs":["serial:/dev/ttyAMA0@115200"],
   "things":{"bowl-1":"gw-1:kitchen"},
   "outbox":{"path":"/var/lib/bowline-edge/outbox.db","max_bytes":268435456},
   "mqtt":{"rate":20,"in_flight":20,"puback_timeout":"20s"},
   "telemetry":{"wire":"v2","rule":"bowline_prod_telemetry",
                "batch_interval":"1m","ack_timeout":"45m"},
   "events":{"rule":"bowline_prod_events"}}

MQTT limits default well under AWS IoT Core's per-connection quotas (20
publishes/s, 20 in flight, 128 KiB/s; AWS allows 100/s, 100, 512 KiB/s). A
publish with no PUBACK within --mqtt-puback-timeout (20s) ends the connection:
a throttled publish may get neither a PUBACK nor a disconnect, so the agent
reconnects and resends from the outbox.

The outbox's cap (--outbox-max-bytes) is lowered at every commit to what the
disk can still hold (statfs, the file's free pages, --outbox-disk-headroom
reserved in the file): a full disk drops the oldest telemetry and reports it
(bowl.telemetry_dropped), never events. /status disk shows fs_free_bytes,
file_free_bytes and effective_max_bytes.

A corrupt outbox (torn write after power loss) stops the agent with exit
status 1; --recover moves the damaged file aside, salvages what is readable
and starts on the copy. A bad config exits 2 naming the field.`

// configArg finds --config's value before the flags are bound, so the
// file's values become the flags' defaults and flags override them.
func configArg(args []string) (string, bool) {
	for i, a := range args {
		a = strings.TrimLeft(a, "-")
		if v, ok := strings.CutPrefix(a, "config="); ok {
			return v, true
		}
		if a == "config" && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// loadFile loads the --config file among args, if any (a zero File
// otherwise), for config.Flags to bind.
func loadFile(args []string) (config.File, error) {
	path, ok := configArg(args)
	if !ok {
		return config.File{}, nil
	}
	f, err := config.Load(path)
	if err != nil {
		return config.File{}, fmt.Errorf("%w: %w", cli.ErrUsage, err)
	}
	return f, nil
}

func runCmd(ctx context.Context, args []string) error {
	file, err := loadFile(args)
	if err != nil {
		return err
	}
	fs := cli.NewFlags("bowline-edge run", runSummary, runUsage)
	fs.String("config", "", "JSON config file; flags override its values")
	recoverFlag := fs.Bool("recover", false, "if the outbox is corrupt, move it to <path>.corrupt-<time>, salvage readable records and start")
	logJSON := fs.Bool("log-json", false, "log as JSON lines instead of text")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	config.Flags(fs, &file)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("%w: --log-level %q: want debug, info, warn or error", cli.ErrUsage, *logLevel)
	}
	hopts := &slog.HandlerOptions{Level: level}
	var logger *slog.Logger
	if *logJSON {
		logger = slog.New(slog.NewJSONHandler(os.Stderr, hopts))
	} else {
		logger = slog.New(slog.NewTextHandler(os.Stderr, hopts))
	}
	cfg, err := file.Agent()
	if err != nil {
		return fmt.Errorf("%w: %w", cli.ErrUsage, err)
	}
	cfg.Logger = logger
	a, err := agent.New(cfg)
	if errors.Is(err, outbox.ErrCorrupt) {
		if !*recoverFlag {
			return fmt.Errorf("%w\nthe outbox file %s is damaged; the agent will not start empty in its place.\nrun again with --recover to move it aside and salvage what is readable", err, cfg.Outbox.Path)
		}
		s, rerr := outbox.Recover(cfg.Outbox.Path, logger)
		if rerr != nil {
			return rerr
		}
		logger.Warn("outbox recovered", "moved_to", s.MovedTo, "copied", s.Copied, "lost", s.Lost)
		a, err = agent.New(cfg)
	}
	if err != nil {
		return err
	}
	return a.Run(ctx)
}
