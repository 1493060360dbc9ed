package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/cloud/telemetry"
	"github.com/bowline-iot/bowline/internal/cli"
)

func runIngest(ctx context.Context, args []string) error {
	fs := cli.NewFlags("bowline ingest", "MQTT -> Kinesis (telemetry) and Emit (bowl events), acknowledged only once durable",
		"bowline ingest [--broker tcp://host:port] [--client-id ID] [--group G] [--metrics-addr host:port]\n\n"+
			"Subscribes to $share/<group>/dt/bowline/+/+/telemetry and .../events (QoS 1, persistent\n"+
			"session). Telemetry goes to the Kinesis telemetry stream; events are validated and emitted\n"+
			"once per (thing, id). Rejected messages are dead-lettered and acknowledged.\n"+
			"Environment: BOWLINE_MQTT_URL, BOWLINE_MQTT_CERT/KEY/CA, BOWLINE_STACK and the standard AWS SDK variables.")
	broker := fs.String("broker", cli.EnvDefault("BOWLINE_MQTT_URL", "tcp://127.0.0.1:1883"), "MQTT broker URL (env BOWLINE_MQTT_URL)")
	clientID := fs.String("client-id", "", "MQTT client id; stable and distinct per ingest process (default bowline-ingest-<hostname>)")
	group := fs.String("group", "bowline-ingest", "shared-subscription group")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus /metrics on this address (off when empty)")
	linger := fs.Duration("linger", 20*time.Millisecond, "how long a Kinesis batch waits for more records")
	gapGrace := fs.Duration("gap-grace", 2*time.Minute, "how long a missing seq range may stay open before bowl.data_gap")
	drain := fs.Duration("drain-timeout", 15*time.Second, "on shutdown, how long messages in progress get to be acknowledged")
	var tlsFiles ingest.TLSFiles
	fs.StringVar(&tlsFiles.Cert, "cert", os.Getenv("BOWLINE_MQTT_CERT"), "client certificate for mTLS (AWS IoT Core): PEM text or a file path (env BOWLINE_MQTT_CERT)")
	fs.StringVar(&tlsFiles.Key, "key", os.Getenv("BOWLINE_MQTT_KEY"), "client private key: PEM text or a file path (env BOWLINE_MQTT_KEY)")
	fs.StringVar(&tlsFiles.CA, "ca", os.Getenv("BOWLINE_MQTT_CA"), "CA bundle to trust instead of the system roots: PEM text or a file path (env BOWLINE_MQTT_CA)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	}
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
		Broker: *broker, ClientID: *clientID, Group: *group, TLS: tlsCfg,
		Producer: telemetry.ProducerConfig{Linger: *linger},
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
	log.Info("ingest starting", "broker", *broker, "stack", names.Stack, "stream", names.TelemetryStream())
	return in.Run(ctx)
}
