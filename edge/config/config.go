package config

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/bowline-iot/bowline/edge/agent"
	"github.com/bowline-iot/bowline/edge/detect"
	"github.com/bowline-iot/bowline/edge/forward"
	"github.com/bowline-iot/bowline/edge/outbox"
	"github.com/bowline-iot/bowline/edge/wire"
)

// ErrInvalid marks a config error (the command exits 2).
var ErrInvalid = errors.New("invalid config")

// Duration is a time.Duration written as a Go duration string ("30s").
type Duration time.Duration

// UnmarshalJSON parses "1m30s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string like \"30s\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// File is the JSON config file. Zero fields take the defaults shown by
// `bowline-edge run --help`.
type File struct {
	Tenant  string `json:"tenant"`
	Gateway string `json:"gateway"`
	Broker  string `json:"broker"`
	TLS     struct {
		CA         string   `json:"ca"`
		Cert       string   `json:"cert"`
		Key        string   `json:"key"`
		ServerName string   `json:"server_name"`
		ALPN       []string `json:"alpn"`
	} `json:"tls"`
	MQTT struct {
		KeepAlive       Duration `json:"keepalive"`
		ConnectTimeout  Duration `json:"connect_timeout"`
		InFlight        int      `json:"in_flight"`
		Rate            float64  `json:"rate"`
		ByteRate        int      `json:"byte_rate"`
		PubackTimeout   Duration `json:"puback_timeout"`
		MaxPayload      int      `json:"max_payload"`
		MaxBatchSamples int      `json:"max_batch_samples"`
		BackoffMin      Duration `json:"backoff_min"`
		BackoffMax      Duration `json:"backoff_max"`
	} `json:"mqtt"`
	Outbox struct {
		Path         string   `json:"path"`
		MaxBytes     int64    `json:"max_bytes"`
		EventReserve int64    `json:"event_reserve"`
		DiskHeadroom int64    `json:"disk_headroom"`
		TelemetryTTL Duration `json:"telemetry_ttl"`
		EventTTL     Duration `json:"event_ttl"`
	} `json:"outbox"`
	// Telemetry says how telemetry reaches the cloud (forward.Config:
	// Wire, Rule, BatchInterval, AckTimeout).
	Telemetry struct {
		// Wire is "v2" (default: one binary batch per batch_interval
		// through AWS IoT Basic Ingest, deleted on the cloud's ack) or
		// "v1" (JSON per thing, deleted on PUBACK), for a cloud without
		// the telemetry stream.
		Wire string `json:"wire"`
		// Rule is the stack's telemetry rule, bowline_<stack>_telemetry;
		// required for v2.
		Rule string `json:"rule"`
		// BatchInterval (default 1m) and AckTimeout (default 45m, longer
		// than the cloud's 30-minute ack cadence plus a batch interval)
		// apply to v2.
		BatchInterval Duration `json:"batch_interval"`
		AckTimeout    Duration `json:"ack_timeout"`
	} `json:"telemetry"`
	// Events says how bowl events reach the cloud (forward.Config.EventsRule).
	Events struct {
		// Rule is the stack's events rule, bowline_<stack>_events: events go
		// to it by AWS IoT Basic Ingest. Empty: through the broker on
		// dt/bowline/<tenant>/<thing>/events (v1), which a cloud accepts
		// until its events cut-over (docs/events-path.md).
		Rule string `json:"rule"`
	} `json:"events"`
	Detect struct {
		FoodLowG float64 `json:"food_low_g"`
		EmptyG   float64 `json:"empty_g"`
	} `json:"detect"`
	Inputs     []string          `json:"inputs"`
	Things     map[string]string `json:"things"`
	StatusAddr string            `json:"status_addr"`
	// Insecure holds the explicit opt-ins to what a production gateway must
	// not do (docs/security.md). Both default to false.
	Insecure struct {
		// PlainBroker allows a tcp:// broker that is not on loopback
		// (no TLS: readings and the client id travel in clear text).
		PlainBroker bool `json:"plain_broker"`
		// OpenStatus allows a status_addr that is not loopback (the
		// status endpoint has no authentication).
		OpenStatus bool `json:"open_status"`
	} `json:"insecure"`
}

// Load reads path (strict: unknown fields are errors that name the field).
func Load(path string) (File, error) {
	var f File
	b, err := os.ReadFile(path)
	if err != nil {
		return f, fmt.Errorf("%w: config file %s: %w", ErrInvalid, path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return f, fmt.Errorf("%w: config file %s: field %s: want %s, got %s", ErrInvalid, path, te.Field, te.Type, te.Value)
		}
		return f, fmt.Errorf("%w: config file %s: %w", ErrInvalid, path, err)
	}
	return f, nil
}

type inputsFlag struct{ f *File }

func (i inputsFlag) String() string {
	if i.f == nil {
		return ""
	}
	return strings.Join(i.f.Inputs, ",")
}

func (i inputsFlag) Set(s string) error { i.f.Inputs = append(i.f.Inputs, s); return nil }

// thingsFlag adds DEVICE=THING pairs to File.Things.
type thingsFlag struct{ f *File }

func (t thingsFlag) String() string {
	if t.f == nil {
		return ""
	}
	pairs := make([]string, 0, len(t.f.Things))
	for dev, thing := range t.f.Things {
		pairs = append(pairs, dev+"="+thing)
	}
	slices.Sort(pairs)
	return strings.Join(pairs, ",")
}

func (t thingsFlag) Set(s string) error {
	dev, thing, ok := strings.Cut(s, "=")
	if !ok || dev == "" || thing == "" {
		return fmt.Errorf("%q: want DEVICE=THING, e.g. bowl-1=gw-1:bowl-1", s)
	}
	if t.f.Things == nil {
		t.f.Things = map[string]string{}
	}
	t.f.Things[dev] = thing
	return nil
}

type durFlag struct{ d *Duration }

func (v durFlag) String() string {
	if v.d == nil {
		return "0s"
	}
	return time.Duration(*v.d).String()
}

func (v durFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*v.d = Duration(d)
	return nil
}

// Flags binds every option of f to fs under a flag named like the JSON
// path (mqtt.in_flight becomes --mqtt-in-flight). Call Load first and bind
// the loaded File so flags override it; the usage shows the defaults.
func Flags(fs *flag.FlagSet, f *File) {
	fs.StringVar(&f.Tenant, "tenant", f.Tenant, "tenant id (topic segment dt/bowline/<tenant>/...); required")
	fs.StringVar(&f.Gateway, "gateway", f.Gateway, "gateway thing name: MQTT client id and the last will's status topic; required")
	fs.StringVar(&f.Broker, "broker", f.Broker, "MQTT broker URL: tcp://host:1883 or ssl://host:8883 (AWS IoT Core); required")
	fs.StringVar(&f.TLS.CA, "tls-ca", f.TLS.CA, "PEM file of the CA that signs the broker's certificate (default: system roots)")
	fs.StringVar(&f.TLS.Cert, "tls-cert", f.TLS.Cert, "PEM client certificate for mutual TLS")
	fs.StringVar(&f.TLS.Key, "tls-key", f.TLS.Key, "PEM private key of --tls-cert")
	fs.StringVar(&f.TLS.ServerName, "tls-server-name", f.TLS.ServerName, "expected broker name (default: the broker URL's host)")
	fs.Func("tls-alpn", "comma-separated ALPN protocols (AWS IoT on port 443: x-amzn-mqtt-ca)", func(s string) error {
		f.TLS.ALPN = strings.Split(s, ",")
		return nil
	})
	fs.Var(durFlag{&f.MQTT.KeepAlive}, "mqtt-keepalive", "MQTT keepalive (default 30s)")
	fs.Var(durFlag{&f.MQTT.ConnectTimeout}, "mqtt-connect-timeout", "bound on one connection attempt (default 10s)")
	fs.IntVar(&f.MQTT.InFlight, "mqtt-in-flight", f.MQTT.InFlight, "unacknowledged QoS 1 publishes at most (default 20; AWS IoT allows 100 per connection)")
	fs.Float64Var(&f.MQTT.Rate, "mqtt-rate", f.MQTT.Rate, "publishes per second at most (default 20; AWS IoT throttles over 100 per connection, and a throttled publish may get no PUBACK)")
	fs.IntVar(&f.MQTT.ByteRate, "mqtt-byte-rate", f.MQTT.ByteRate, "payload bytes per second at most; one message always passes (default 131072; AWS IoT allows 512 KiB/s per connection)")
	fs.Var(durFlag{&f.MQTT.PubackTimeout}, "mqtt-puback-timeout", "a publish with no PUBACK this long ends the connection; the gateway reconnects and resends from the outbox (default 20s)")
	fs.IntVar(&f.MQTT.MaxPayload, "mqtt-max-payload", f.MQTT.MaxPayload, "bytes per message at most (default 131072, the AWS IoT limit)")
	fs.IntVar(&f.MQTT.MaxBatchSamples, "mqtt-max-batch-samples", f.MQTT.MaxBatchSamples, "samples per telemetry message at most (default 1000)")
	fs.Var(durFlag{&f.MQTT.BackoffMin}, "mqtt-backoff-min", "first reconnect delay; doubles per failure, jittered (default 500ms)")
	fs.Var(durFlag{&f.MQTT.BackoffMax}, "mqtt-backoff-max", "longest reconnect delay (default 1m)")
	fs.StringVar(&f.Outbox.Path, "outbox", f.Outbox.Path, "bbolt outbox file (default /var/lib/bowline-edge/outbox.db)")
	fs.Int64Var(&f.Outbox.MaxBytes, "outbox-max-bytes", f.Outbox.MaxBytes, "cap of the stored records in bytes (default 268435456); lowered at every commit to what the disk can still hold, so a full disk drops the oldest telemetry and reports it (docs/disk-budget.md)")
	fs.Int64Var(&f.Outbox.DiskHeadroom, "outbox-disk-headroom", f.Outbox.DiskHeadroom, "file system bytes the outbox budget leaves free, for one commit's growth (default 1048576)")
	fs.Int64Var(&f.Outbox.EventReserve, "outbox-event-reserve", f.Outbox.EventReserve, "bytes of the cap telemetry may not use, kept for events (default max/10)")
	fs.Var(durFlag{&f.Outbox.TelemetryTTL}, "outbox-telemetry-ttl", "drop (and report) telemetry that waited in the outbox longer than this, measured on a monotonic clock, never by wall time (default 168h)")
	fs.Var(durFlag{&f.Outbox.EventTTL}, "outbox-event-ttl", "drop events that waited in the outbox longer than this (default 0: never)")
	fs.StringVar(&f.Telemetry.Wire, "telemetry-wire", f.Telemetry.Wire, `telemetry format: "v2" (default) sends one binary batch of every bowl per --telemetry-batch-interval through AWS IoT Basic Ingest and deletes telemetry only when the cloud acknowledges it; "v1" sends JSON per bowl to dt/bowline/<tenant>/<thing>/telemetry and deletes it on PUBACK, for a cloud without the telemetry stream`)
	fs.StringVar(&f.Telemetry.Rule, "telemetry-rule", f.Telemetry.Rule, "AWS IoT rule that takes the batches, bowline_<stack>_telemetry (e.g. bowline_dev_telemetry); required for v2")
	fs.StringVar(&f.Events.Rule, "events-rule", f.Events.Rule, "AWS IoT rule that takes bowl events by Basic Ingest, bowline_<stack>_events (e.g. bowline_dev_events); empty: events go through the broker on dt/bowline/<tenant>/<thing>/events (v1, accepted by a cloud until its events cut-over)")
	fs.Var(durFlag{&f.Telemetry.BatchInterval}, "telemetry-batch-interval", "v2: how often the batch of every bowl's new telemetry is sent (default 1m)")
	fs.Var(durFlag{&f.Telemetry.AckTimeout}, "telemetry-ack-timeout", "v2: telemetry sent and not acknowledged by the cloud this long after is sent again; must exceed the cloud's 30m ack cadence plus the batch interval; the cloud's consumer may lag by the difference before gateways resend, and its gap grace covers two (default "+forward.DefaultAckTimeout.String()+")")
	fs.Float64Var(&f.Detect.FoodLowG, "detect-food-low-g", f.Detect.FoodLowG, "food level for bowl.food_low in grams (default 40)")
	fs.Float64Var(&f.Detect.EmptyG, "detect-empty-g", f.Detect.EmptyG, "food level for bowl.empty in grams (default 5)")
	fs.Var(inputsFlag{f}, "input", "bowl link, repeatable: serial:/dev/ttyUSB0[@115200] (UART or pty), unix:/run/bowl.sock (dial), listen:/run/bowls.sock (accept many)")
	fs.Var(thingsFlag{f}, "thing", "DEVICE=THING, repeatable (file: \"things\":{\"DEVICE\":\"THING\"}): the thing name of the bowl whose MCU reports DEVICE in its hello; an unmapped device is <gateway>:<device> when its id has no ':', and refused otherwise; with telemetry wire v2 every THING must be <gateway>:<bowl>")
	fs.StringVar(&f.StatusAddr, "status-addr", f.StatusAddr, `loopback status endpoint (/healthz, /status, /metrics; no authentication); "off" disables (default 127.0.0.1:9110)`)
	fs.BoolVar(&f.Insecure.PlainBroker, "insecure-plain-broker", f.Insecure.PlainBroker, "allow a tcp:// (no TLS) broker that is not on loopback; for labs only")
	fs.BoolVar(&f.Insecure.OpenStatus, "insecure-open-status", f.Insecure.OpenStatus, "allow a --status-addr that is not loopback (the endpoint has no authentication); for labs only")
}

// DefaultOutboxPath is where the outbox lives when not configured.
const DefaultOutboxPath = "/var/lib/bowline-edge/outbox.db"

// Agent converts f into an agent.Config, checking every field; an error
// wraps ErrInvalid and names the field.
func (f File) Agent() (agent.Config, error) {
	bad := func(field, format string, args ...any) (agent.Config, error) {
		return agent.Config{}, fmt.Errorf("%w: %s: %s", ErrInvalid, field, fmt.Sprintf(format, args...))
	}
	if f.Tenant == "" {
		return bad("tenant", "must be set")
	}
	// The cloud's name rule: ingest would refuse every message of a gateway
	// whose tenant or name breaks it.
	if err := wire.CheckName("tenant", f.Tenant); err != nil {
		return agent.Config{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if f.Gateway == "" {
		return bad("gateway", "must be set")
	}
	if err := wire.CheckGatewayName("gateway", f.Gateway); err != nil {
		return agent.Config{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if f.Broker == "" {
		return bad("broker", "must be set")
	}
	if host, plain := plainBrokerHost(f.Broker); plain && !isLoopback(host) && !f.Insecure.PlainBroker {
		return bad("broker", "%q is plain tcp (no TLS) to a host that is not loopback; use ssl:// or set insecure.plain_broker (--insecure-plain-broker)", f.Broker)
	}
	if a := f.StatusAddr; a != "" && a != "off" && !f.Insecure.OpenStatus {
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			return bad("status_addr", "%q: want host:port (loopback) or \"off\": %v", a, err)
		}
		if !isLoopback(host) {
			return bad("status_addr", "%q is not loopback and the status endpoint has no authentication; use 127.0.0.1:<port> or set insecure.open_status (--insecure-open-status)", a)
		}
	}
	for _, n := range []struct {
		field string
		v     float64
	}{
		{"mqtt.in_flight", float64(f.MQTT.InFlight)}, {"mqtt.rate", f.MQTT.Rate}, {"mqtt.max_payload", float64(f.MQTT.MaxPayload)},
		{"mqtt.byte_rate", float64(f.MQTT.ByteRate)}, {"mqtt.puback_timeout", float64(f.MQTT.PubackTimeout)},
		{"mqtt.max_batch_samples", float64(f.MQTT.MaxBatchSamples)}, {"mqtt.keepalive", float64(f.MQTT.KeepAlive)},
		{"mqtt.connect_timeout", float64(f.MQTT.ConnectTimeout)}, {"mqtt.backoff_min", float64(f.MQTT.BackoffMin)},
		{"mqtt.backoff_max", float64(f.MQTT.BackoffMax)}, {"outbox.max_bytes", float64(f.Outbox.MaxBytes)},
		{"outbox.event_reserve", float64(f.Outbox.EventReserve)}, {"outbox.disk_headroom", float64(f.Outbox.DiskHeadroom)}, {"outbox.telemetry_ttl", float64(f.Outbox.TelemetryTTL)},
		{"outbox.event_ttl", float64(f.Outbox.EventTTL)}, {"telemetry.batch_interval", float64(f.Telemetry.BatchInterval)},
		{"telemetry.ack_timeout", float64(f.Telemetry.AckTimeout)},
	} {
		if n.v < 0 {
			return bad(n.field, "must not be negative (0 takes the default)")
		}
	}
	if err := f.checkTelemetry(); err != nil {
		return agent.Config{}, err
	}
	var c agent.Config
	for _, s := range f.Inputs {
		in, err := agent.ParseInput(s)
		if err != nil {
			return bad("inputs", "%v", err)
		}
		c.Inputs = append(c.Inputs, in)
	}
	if len(c.Inputs) == 0 {
		return bad("inputs", "at least one bowl input is required")
	}
	c.Things = f.Things
	c.StatusAddr = f.StatusAddr
	c.Forward = forward.Config{
		Broker: f.Broker, Tenant: f.Tenant, ClientID: f.Gateway, Thing: f.Gateway,
		KeepAlive: time.Duration(f.MQTT.KeepAlive), ConnectTimeout: time.Duration(f.MQTT.ConnectTimeout),
		InFlight: f.MQTT.InFlight, Rate: f.MQTT.Rate, ByteRate: f.MQTT.ByteRate,
		PubackTimeout: time.Duration(f.MQTT.PubackTimeout), MaxPayload: f.MQTT.MaxPayload, MaxBatchSamples: f.MQTT.MaxBatchSamples,
		BackoffMin: time.Duration(f.MQTT.BackoffMin), BackoffMax: time.Duration(f.MQTT.BackoffMax),
		Wire: f.Telemetry.Wire, Rule: f.Telemetry.Rule, EventsRule: f.Events.Rule,
		BatchInterval: time.Duration(f.Telemetry.BatchInterval), AckTimeout: time.Duration(f.Telemetry.AckTimeout),
	}
	if err := c.Forward.Validate(); err != nil {
		return agent.Config{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	tlsCfg, err := f.tlsConfig()
	if err != nil {
		return agent.Config{}, err
	}
	c.Forward.TLS = tlsCfg
	if tlsCfg != nil && strings.HasPrefix(f.Broker, "tcp://") {
		return bad("broker", "%q is plain tcp but tls settings are given; use ssl://", f.Broker)
	}
	path := f.Outbox.Path
	if path == "" {
		path = DefaultOutboxPath
	}
	c.Outbox = outbox.Config{
		Path: path, MaxBytes: f.Outbox.MaxBytes, EventReserve: f.Outbox.EventReserve, DiskHeadroom: f.Outbox.DiskHeadroom,
		TelemetryTTL: time.Duration(f.Outbox.TelemetryTTL), EventTTL: time.Duration(f.Outbox.EventTTL),
	}
	if err := c.Outbox.Validate(); err != nil {
		return agent.Config{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	c.Detect = detect.Config{FoodLowG: f.Detect.FoodLowG, EmptyG: f.Detect.EmptyG}
	if _, err := detect.New(c.Detect); err != nil {
		return agent.Config{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := c.Validate(); err != nil {
		return agent.Config{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return c, nil
}

// checkTelemetry checks the telemetry section, naming the field; the
// forwarder checks the same again.
func (f File) checkTelemetry() error {
	t := f.Telemetry
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalid, field, fmt.Sprintf(format, args...))
	}
	switch t.Wire {
	case "", forward.WireV2:
	case forward.WireV1:
		return nil
	default:
		return bad("telemetry.wire", "%q: want %q or %q", t.Wire, forward.WireV2, forward.WireV1)
	}
	if t.Rule == "" {
		return bad("telemetry.rule", "must be set for telemetry.wire v2: the stack's telemetry rule, e.g. %q (or set telemetry.wire v1 for a cloud without it)", wire.RuleName("dev", wire.TelemetryRule))
	}
	interval, timeout := time.Duration(t.BatchInterval), time.Duration(t.AckTimeout)
	if interval == 0 {
		interval = wire.DefaultBatchInterval
	}
	if timeout == 0 {
		timeout = forward.DefaultAckTimeout
	}
	if timeout <= interval {
		return bad("telemetry.ack_timeout", "%s: must be longer than telemetry.batch_interval %s", timeout, interval)
	}
	return nil
}

// plainBrokerHost returns the host of a tcp:// broker URL; plain is false
// for every other scheme.
func plainBrokerHost(broker string) (host string, plain bool) {
	u, err := url.Parse(broker)
	if err != nil || u.Scheme != "tcp" {
		return "", false
	}
	return u.Hostname(), true
}

// isLoopback reports whether host is localhost or a loopback address; an
// empty host (":9110", every interface) is not.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (f File) tlsConfig() (*tls.Config, error) {
	t := f.TLS
	secure := strings.HasPrefix(f.Broker, "ssl://") || strings.HasPrefix(f.Broker, "tls://") || strings.HasPrefix(f.Broker, "mqtts://")
	if t.CA == "" && t.Cert == "" && t.Key == "" && !secure {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, NextProtos: t.ALPN}
	if t.CA != "" {
		pem, err := os.ReadFile(t.CA)
		if err != nil {
			return nil, fmt.Errorf("%w: tls.ca %s: %w", ErrInvalid, t.CA, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: tls.ca %s: no PEM certificate in the file", ErrInvalid, t.CA)
		}
		c.RootCAs = pool
	}
	if (t.Cert == "") != (t.Key == "") {
		return nil, fmt.Errorf("%w: tls.cert and tls.key: set both or neither", ErrInvalid)
	}
	if t.Cert != "" {
		pair, err := tls.LoadX509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, fmt.Errorf("%w: tls.cert %s / tls.key %s: %w", ErrInvalid, t.Cert, t.Key, err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}
