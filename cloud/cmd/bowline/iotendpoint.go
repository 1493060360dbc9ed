package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/bowline-iot/bowline/cloud/iotdata"
	"github.com/bowline-iot/bowline/internal/cli"
)

func runIoTEndpoint(ctx context.Context, args []string) error {
	return iotEndpointCmd(ctx, args, os.Stdout)
}

func iotEndpointCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := cli.NewFlags("bowline iot-endpoint", "HTTPS Publish -> MQTT, the local stand-in for the AWS IoT data plane",
		"bowline iot-endpoint --broker tcp://host:port [--addr 127.0.0.1:0] [--client-id ID] [--print-addr]\n\n"+
			"Serves the IoT data plane's Publish (POST /topics/<escaped topic>?qos=<0|1>, SigV4 for\n"+
			"iotdata; cloud/iotdata.LocalEndpoint) and publishes each body on the broker through an\n"+
			"MQTT client connection, as AWS IoT publishes an HTTPS Publish on its broker. It is where\n"+
			"`bowline consume` sends the gateways' acknowledgements (cmd/bowline/<tenant>/<gw>/ack)\n"+
			"when the broker is a process of its own (Mosquitto); point the consumer at it with\n"+
			"AWS_ENDPOINT_URL_IOT_DATA_PLANE or --iot-endpoint. Answers 503 while the broker is away\n"+
			"(the consumer's publisher retries). Listens on loopback only: it checks the signature's\n"+
			"form, not the key (docs/telemetry-path.md).\n"+
			"Environment: BOWLINE_MQTT_URL (default of --broker).")
	broker := fs.String("broker", "", "MQTT broker URL to publish on (default: env BOWLINE_MQTT_URL)")
	addr := fs.String("addr", "127.0.0.1:0", "loopback address to listen on (port 0: a free port)")
	clientID := fs.String("client-id", "bowline-iot-endpoint", "MQTT client id (clean session; the endpoint only publishes)")
	printAddr := fs.Bool("print-addr", false, "print the endpoint's URL (http://host:port) alone on the first line of stdout")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	}
	if *broker == "" {
		*broker = os.Getenv("BOWLINE_MQTT_URL")
	}
	if *broker == "" {
		return fmt.Errorf("%w: --broker is required (or set BOWLINE_MQTT_URL)", cli.ErrUsage)
	}
	if err := loopbackAddr(*addr); err != nil {
		return fmt.Errorf("%w: --addr %q: %v", cli.ErrUsage, *addr, err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", *addr, err)
	}
	defer ln.Close()
	mb, err := iotdata.DialMQTT(ctx, iotdata.MQTTConfig{URL: *broker, ClientID: *clientID, Logger: log})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer mb.Close()
	url := "http://" + ln.Addr().String()
	if *printAddr {
		fmt.Fprintln(stdout, url)
	} else {
		fmt.Fprintf(stdout, "bowline iot-endpoint: listening on %s, publishing on %s\n", url, redactURL(*broker))
	}
	srv := &http.Server{
		Handler:           &iotdata.LocalEndpoint{Broker: loggedBroker{mb, log}, Logger: log},
		ReadHeaderTimeout: 5 * time.Second,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("iot endpoint: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("iot endpoint shutdown: %w", err)
	}
	return nil
}

// loopbackAddr refuses a listen address that is not a loopback IP or
// localhost: the endpoint does not verify the signature's key.
func loopbackAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return errors.New("want a loopback host (127.0.0.1, ::1 or localhost)")
}

// loggedBroker logs every message published, one line each ("iot
// publish"), so a run can count the acknowledgements that went out.
type loggedBroker struct {
	next iotdata.Broker
	log  *slog.Logger
}

func (b loggedBroker) Publish(topic string, payload []byte, qos byte) error {
	if err := b.next.Publish(topic, payload, qos); err != nil {
		return err
	}
	b.log.Info("iot publish", "topic", topic, "bytes", len(payload), "qos", qos)
	return nil
}
