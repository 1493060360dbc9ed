package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/internal/cli"
)

func runIngest(ctx context.Context, args []string) error {
	fs := cli.NewFlags("bowline ingest", "MQTT -> Emit (bowl events), acknowledged only once durable",
		"bowline ingest [--broker tcp://host:port] [--slots N | --client-id ID] [--group G] [--metrics-addr host:port]\n\n"+
			"Subscribes to $share/<group>/dt/bowline/+/+/events (QoS 1, persistent session). Each\n"+
			"process leases one of --slots client ids (<group>-0, <group>-1, ...) in the app table,\n"+
			"so a replaced process's session is resumed by its successor (docs/ingest-sessions.md).\n"+
			"Events are validated and emitted once per (thing, id); a hole in a thing's event seqs\n"+
			"raises bowl.data_gap after --gap-grace. Rejected messages are dead-lettered and acknowledged.\n"+
			"Telemetry is not ingested here: the topic rules put it into Kinesis (docs/telemetry-path.md).\n"+
			"Environment: BOWLINE_MQTT_URL, BOWLINE_MQTT_CERT/KEY/CA, BOWLINE_STACK and the standard AWS SDK variables.")
	// A broker URL may carry user:password, so it too is read from the
	// environment after parsing and logged without its user info.
	broker := fs.String("broker", "", "MQTT broker URL (default: env BOWLINE_MQTT_URL, else tcp://127.0.0.1:1883)")
	clientID := fs.String("client-id", "", "fixed MQTT client id, no lease: only for one process that always returns under this id (default: a leased slot)")
	slots := fs.Int("slots", 0, "client-id slots leased by the group's processes; set to the number of ingest processes (default 1; env BOWLINE_INGEST_SLOTS)")
	leaseTTL := fs.Duration("lease-ttl", 30*time.Second, "how long a dead process's slot stays leased before a successor takes over its session")
	group := fs.String("group", "", "shared-subscription group (default bowline-<stack>-ingest, scoped by BOWLINE_STACK; client ids are <group>-<slot>)")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus /metrics on this address (off when empty)")
	gapGrace := fs.Duration("gap-grace", 2*time.Minute, "how long a missing range of event seqs may stay open before bowl.data_gap")
	drain := fs.Duration("drain-timeout", 15*time.Second, "on shutdown, how long messages in progress get to be acknowledged")
	var tlsFiles ingest.TLSFiles
	// The TLS flags default to empty and take their environment variable
	// after parsing, so --help and usage errors never print a key
	// (docs/security.md).
	fs.StringVar(&tlsFiles.Cert, "cert", "", "client certificate for mTLS (AWS IoT Core): PEM text or a file path (default: env BOWLINE_MQTT_CERT)")
	fs.StringVar(&tlsFiles.Key, "key", "", "client private key: PEM text or a file path (default: env BOWLINE_MQTT_KEY; never printed)")
	fs.StringVar(&tlsFiles.CA, "ca", "", "CA bundle to trust instead of the system roots: PEM text or a file path (default: env BOWLINE_MQTT_CA)")
	if v := os.Getenv("BOWLINE_INGEST_SLOTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("%w: BOWLINE_INGEST_SLOTS is %q; want a whole number of at least 1", cli.ErrUsage, v)
		}
		*slots = n // flags parsed next override it
	}
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	}
	if *slots < 0 {
		return fmt.Errorf("%w: --slots %d: want at least 1 (0 takes the default, 1)", cli.ErrUsage, *slots)
	}
	if *broker == "" {
		*broker = cli.EnvDefault("BOWLINE_MQTT_URL", "tcp://127.0.0.1:1883")
	}
	secretFromEnv(&tlsFiles.Cert, "BOWLINE_MQTT_CERT")
	secretFromEnv(&tlsFiles.Key, "BOWLINE_MQTT_KEY")
	secretFromEnv(&tlsFiles.CA, "BOWLINE_MQTT_CA")
	tlsCfg, err := tlsFiles.Config()
	if err != nil {
		return fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	reg := app.NewRegistry()
	stack, err := openApp(ctx, log, reg)
	if err != nil {
		return err
	}
	defer stack.Close()
	names := stack.Names
	metrics := ingest.NewMetrics(reg)
	in, err := stack.Ingest(ingest.Config{
		Broker: *broker, ClientID: *clientID, Slots: *slots, LeaseTTL: *leaseTTL, Group: *group, TLS: tlsCfg,
		GapGrace: *gapGrace, DrainTimeout: *drain,
		Logger: log, Observer: metrics,
	})
	if err != nil {
		return fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	if *metricsAddr != "" {
		if err := serveMetrics(ctx, *metricsAddr, reg, log); err != nil {
			return err
		}
	}
	log.Info("ingest starting", "broker", redactURL(*broker), "stack", names.Stack)
	return in.Run(ctx)
}
