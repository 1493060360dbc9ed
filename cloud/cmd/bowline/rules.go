package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/cloud/rules"
	"github.com/bowline-iot/bowline/cloud/telemetry"
	"github.com/bowline-iot/bowline/internal/cli"
)

func runRules(ctx context.Context, args []string) error { return rulesCmd(ctx, args, os.Stdout) }

func rulesCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := cli.NewFlags("bowline rules", "MQTT -> Kinesis, the local stand-in for the AWS IoT topic rules",
		"bowline rules [--broker tcp://host:port] [--client-id ID] [--legacy-telemetry-v1=false] [--legacy-events-v1=false] [--metrics-addr host:port]\n\n"+
			"Runs the topic rules of cloud/rules as AWS IoT would: subscribes (QoS 1, persistent\n"+
			"session) to $aws/rules/bowline_<stack>_telemetry/dt/bowline/+/+/batch and\n"+
			"$aws/rules/bowline_<stack>_events/dt/bowline/+/+/events (Basic Ingest); while the v1\n"+
			"telemetry rule is on, to $aws/rules/bowline_<stack>_telemetry_v1/dt/bowline/+/+/telemetry\n"+
			"and dt/bowline/+/+/telemetry; until the events cut-over, to dt/bowline/+/+/events (v1\n"+
			"gateways publish events through the broker). Writes {\"v\":2,\"tenant\",\"gateway\",\n"+
			"\"received_at\",\"payload\"} records to the telemetry stream (partition key = gateway) or\n"+
			"the events stream (partition key = tenant) and acknowledges a message only once its\n"+
			"record is in the stream. A record Kinesis refuses --max-attempts times goes to the\n"+
			"rule-errors queue as an AWS error action message (metric bowline_rules_errors_total).\n"+
			"Environment: BOWLINE_MQTT_URL, BOWLINE_MQTT_CERT/KEY/CA, BOWLINE_STACK and the standard AWS SDK variables.")
	broker := fs.String("broker", "", "MQTT broker URL (default: env BOWLINE_MQTT_URL, else tcp://127.0.0.1:1883)")
	clientID := fs.String("client-id", "", "MQTT client id of the persistent session (default bowline-rules-<stack>)")
	legacy := fs.Bool("legacy-telemetry-v1", true, "run the telemetry_v1 rule too (the template's LegacyTelemetryV1; false after the cut-over)")
	legacyEvents := fs.Bool("legacy-events-v1", true, "take v1 events published through the broker on dt/bowline/+/+/events too (false after the events cut-over, docs/events-path.md)")
	maxAttempts := fs.Int("max-attempts", rules.DefaultMaxAttempts, "PutRecords attempts of a record before it goes to the error queue")
	maxInFlight := fs.Int("max-in-flight", rules.DefaultMaxInFlight, "messages taken from the broker and not yet in the stream, at most (set the broker's per-client in-flight window, Mosquitto's max_inflight_messages, to at most this)")
	linger := fs.Duration("linger", 20*time.Millisecond, "how long a Kinesis batch waits for more records")
	drain := fs.Duration("drain-timeout", 15*time.Second, "on shutdown, how long records in progress get to reach the stream")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus /metrics on this address (off when empty)")
	var tlsFiles rules.TLSFiles
	// Empty defaults, filled from the environment after parsing, so --help
	// never prints a key (docs/security.md).
	fs.StringVar(&tlsFiles.Cert, "cert", "", "client certificate for mTLS: PEM text or a file path (default: env BOWLINE_MQTT_CERT)")
	fs.StringVar(&tlsFiles.Key, "key", "", "client private key: a file path only, since ps shows every argument (default: env BOWLINE_MQTT_KEY, PEM text or a path; never printed)")
	fs.StringVar(&tlsFiles.CA, "ca", "", "CA bundle to trust instead of the system roots: PEM text or a file path (default: env BOWLINE_MQTT_CA)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	}
	if err := keyIsAPath(tlsFiles.Key); err != nil {
		return err
	}
	if *maxInFlight < 1 {
		return fmt.Errorf("%w: --max-in-flight %d: want at least 1", cli.ErrUsage, *maxInFlight)
	}
	if *maxAttempts < 1 {
		return fmt.Errorf("%w: --max-attempts %d: want at least 1", cli.ErrUsage, *maxAttempts)
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
	specs := []rules.Spec{rules.Telemetry, rules.Events}
	if *legacy {
		specs = append(specs, rules.TelemetryV1)
	}
	if !*legacyEvents {
		specs[1] = rules.Events.WithoutBroker()
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	reg := app.NewRegistry()
	stack, err := openApp(ctx, log, reg)
	if err != nil {
		return err
	}
	defer stack.Close()
	r, err := stack.Rules(ctx, rules.Config{
		Broker: *broker, ClientID: *clientID, TLS: tlsCfg, Rules: specs, MaxInFlight: *maxInFlight,
		Producer:     telemetry.ProducerConfig{Linger: *linger, MaxAttempts: *maxAttempts},
		DrainTimeout: *drain, Logger: log,
	})
	if err != nil {
		return err
	}
	if *metricsAddr != "" {
		if err := serveMetrics(ctx, *metricsAddr, reg, log); err != nil {
			r.Close(context.Background())
			return err
		}
	}
	fmt.Fprintf(stdout, "bowline rules: %v (stack %s, broker %s)\n", r.Filters(), stack.Names.Stack, redactURL(*broker))
	return r.Run(ctx)
}
