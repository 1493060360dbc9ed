package config

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/edge/forward"
)

func TestFileAndFlags(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "edge.json")
	body := `{"tenant":"t1","gateway":"gw-1","broker":"tcp://127.0.0.1:1883",
	  "inputs":["serial:/dev/ttyAMA0@115200"],
	  "outbox":{"path":"` + filepath.Join(dir, "o.db") + `","max_bytes":1048576,"telemetry_ttl":"48h"},
	  "mqtt":{"rate":50,"keepalive":"45s"},
	  "telemetry":{"rule":"bowline_dev_telemetry","ack_timeout":"40m"},
	  "events":{"rule":"bowline_dev_events"}}`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	Flags(fs, &f)
	if err := fs.Parse([]string{"--mqtt-rate", "20", "--input", "unix:/run/b.sock", "--telemetry-batch-interval", "2m"}); err != nil {
		t.Fatal(err)
	}
	c, err := f.Agent()
	if err != nil {
		t.Fatal(err)
	}
	if c.Forward.Rate != 20 || c.Forward.KeepAlive != 45*time.Second || c.Outbox.MaxBytes != 1<<20 || c.Outbox.TelemetryTTL != 48*time.Hour {
		t.Fatalf("config = %+v / %+v; want flag rate 20 over file 50, keepalive 45s, cap 1 MiB, ttl 48h", c.Forward, c.Outbox)
	}
	if c.Forward.Wire != "" || c.Forward.Rule != "bowline_dev_telemetry" || c.Forward.BatchInterval != 2*time.Minute || c.Forward.AckTimeout != 40*time.Minute {
		t.Fatalf("telemetry = wire %q rule %q interval %s timeout %s; want v2 (default), bowline_dev_telemetry, 2m (flag), 40m (file)", c.Forward.Wire, c.Forward.Rule, c.Forward.BatchInterval, c.Forward.AckTimeout)
	}
	if c.Forward.EventsRule != "bowline_dev_events" {
		t.Fatalf("events rule = %q; want bowline_dev_events (file)", c.Forward.EventsRule)
	}
	if len(c.Inputs) != 2 || c.Inputs[1].Path != "/run/b.sock" {
		t.Fatalf("inputs = %+v; want the file's and the flag's", c.Inputs)
	}
}

func TestErrorsNameTheField(t *testing.T) {
	base := func() File {
		var f File
		f.Tenant, f.Gateway, f.Broker, f.Inputs = "t1", "gw-1", "tcp://127.0.0.1:1883", []string{"unix:/x"}
		f.Outbox.Path = "/tmp/x.db"
		f.Telemetry.Rule = "bowline_dev_telemetry"
		return f
	}
	tests := []struct {
		name  string
		edit  func(*File)
		field string
	}{
		{"tenant", func(f *File) { f.Tenant = "" }, "tenant"},
		{"gateway", func(f *File) { f.Gateway = "" }, "gateway"},
		{"inputs", func(f *File) { f.Inputs = nil }, "inputs"},
		{"in_flight", func(f *File) { f.MQTT.InFlight = -1 }, "in_flight"},
		{"ca file", func(f *File) { f.Broker = "ssl://h:8883"; f.TLS.CA = "/nonexistent/ca.pem" }, "tls.ca"},
		{"tls on tcp", func(f *File) { f.TLS.Cert, f.TLS.Key = "a", "" }, "tls.key"},
		{"thing name", func(f *File) { f.Things = map[string]string{"dev": "a/b"} }, "things"},
		{"detect", func(f *File) { f.Detect.EmptyG, f.Detect.FoodLowG = 50, 10 }, "empty_g"},
		{"telemetry wire", func(f *File) { f.Telemetry.Wire = "v3" }, `telemetry.wire: "v3"`},
		{"telemetry rule for v2", func(f *File) { f.Telemetry.Rule = "" }, "telemetry.rule: must be set"},
		{"telemetry rule name", func(f *File) { f.Telemetry.Rule = "bowline-dev-telemetry" }, `telemetry rule "bowline-dev-telemetry"`},
		{"ack timeout under interval", func(f *File) {
			f.Telemetry.AckTimeout = Duration(time.Minute)
			f.Telemetry.BatchInterval = Duration(5 * time.Minute)
		}, "telemetry.ack_timeout"},
		{"negative batch interval", func(f *File) { f.Telemetry.BatchInterval = Duration(-time.Second) }, "telemetry.batch_interval"},
	}
	for _, tt := range tests {
		f := base()
		tt.edit(&f)
		_, err := f.Agent()
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("%s: Agent() = %v; want ErrInvalid naming %s", tt.name, err, tt.field)
		}
	}
}

// A batch interval is held against the ack timeout the forwarder will
// use: with none set, the gateways' default (wire.DefaultAckTimeout, 45
// min). Both checks used 30 min and refused a 40 min interval.
func TestBatchIntervalAgainstDefaultAckTimeout(t *testing.T) {
	f := File{Tenant: "acme", Gateway: "gw-1", Broker: "tcp://127.0.0.1:1883", Inputs: []string{"unix:/x"}}
	f.Outbox.Path = "/tmp/x.db"
	f.Telemetry.Rule = "bowline_dev_telemetry"
	f.Telemetry.BatchInterval = Duration(forward.DefaultAckTimeout - 5*time.Minute)
	if _, err := f.Agent(); err != nil {
		t.Errorf("batch_interval %v, no ack_timeout: Agent() = %v; want nil (the default ack timeout is %v)", time.Duration(f.Telemetry.BatchInterval), err, forward.DefaultAckTimeout)
	}
	f.Telemetry.BatchInterval = Duration(forward.DefaultAckTimeout)
	if _, err := f.Agent(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "telemetry.ack_timeout") {
		t.Errorf("batch_interval %v, no ack_timeout: Agent() = %v; want ErrInvalid naming telemetry.ack_timeout", time.Duration(f.Telemetry.BatchInterval), err)
	}
}

// A tenant or gateway name ingest would refuse is refused at config load,
// naming the field, the value and what is wrong: a gateway with tenant
// _acme used to start and have every message dead-lettered as bad_topic.
func TestNamesIngestWouldRefuse(t *testing.T) {
	for _, c := range []struct {
		edit func(*File)
		want string
	}{
		{func(f *File) { f.Tenant = "_acme" }, `tenant "_acme": must start with a letter or digit`},
		{func(f *File) { f.Tenant = "acme/eu" }, `tenant "acme/eu": must not contain '/'`},
		{func(f *File) { f.Gateway = "-gw" }, `gateway "-gw": must start with a letter or digit`},
		{func(f *File) { f.Things = map[string]string{"dev-1": ".bowl"} }, `things["dev-1"] ".bowl": must start with a letter or digit`},
	} {
		f := File{Tenant: "acme", Gateway: "gw-1", Broker: "tcp://127.0.0.1:1883", Inputs: []string{"unix:/x"}}
		f.Outbox.Path = "/tmp/x.db"
		f.Telemetry.Rule = "bowline_dev_telemetry"
		c.edit(&f)
		_, err := f.Agent()
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Agent() = %v; want ErrInvalid saying %s", err, c.want)
		}
	}
}

// TestInsecureSettingsNeedAnExplicitOptIn: a status endpoint off loopback
// (it has no authentication), a plain tcp:// broker off loopback and
// negative numbers are refused at load, naming the field; the insecure
// opt-ins allow the first two, and loopback tcp:// (the dev stack, the
// tests) needs none.
func TestInsecureSettingsNeedAnExplicitOptIn(t *testing.T) {
	base := func() File {
		f := File{Tenant: "t1", Gateway: "gw-1", Broker: "tcp://127.0.0.1:1883", Inputs: []string{"unix:/x"}}
		f.Outbox.Path = "/tmp/x.db"
		f.Telemetry.Rule = "bowline_dev_telemetry"
		return f
	}
	for _, tc := range []struct {
		name  string
		edit  func(*File)
		field string // "" means accepted
	}{
		{"status on every interface", func(f *File) { f.StatusAddr = "0.0.0.0:9110" }, "status_addr"},
		{"status on all interfaces, no host", func(f *File) { f.StatusAddr = ":9110" }, "status_addr"},
		{"status on a LAN address", func(f *File) { f.StatusAddr = "192.168.1.10:9110" }, "status_addr"},
		{"status on loopback", func(f *File) { f.StatusAddr = "127.0.0.1:9110" }, ""},
		{"status on ::1", func(f *File) { f.StatusAddr = "[::1]:9110" }, ""},
		{"status off", func(f *File) { f.StatusAddr = "off" }, ""},
		{"status open with the opt-in", func(f *File) { f.StatusAddr = "0.0.0.0:9110"; f.Insecure.OpenStatus = true }, ""},
		{"plain broker off loopback", func(f *File) { f.Broker = "tcp://broker.example.org:1883" }, "broker"},
		{"plain broker with the opt-in", func(f *File) { f.Broker = "tcp://broker.example.org:1883"; f.Insecure.PlainBroker = true }, ""},
		{"plain broker on localhost", func(f *File) { f.Broker = "tcp://localhost:1883" }, ""},
		{"negative max_batch_samples", func(f *File) { f.MQTT.MaxBatchSamples = -1 }, "mqtt.max_batch_samples"},
		{"negative max_payload", func(f *File) { f.MQTT.MaxPayload = -5 }, "mqtt.max_payload"},
		{"negative telemetry_ttl", func(f *File) { f.Outbox.TelemetryTTL = Duration(-time.Hour) }, "outbox.telemetry_ttl"},
		{"gateway name holding the bowl separator", func(f *File) { f.Gateway = "gw-1:x" }, "gateway"},
		{"v1 needs no rule", func(f *File) { f.Telemetry.Wire, f.Telemetry.Rule = "v1", "" }, ""},
	} {
		f := base()
		tc.edit(&f)
		_, err := f.Agent()
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: Agent() = %v; want accepted", tc.name, err)
		case tc.field != "" && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.field)):
			t.Errorf("%s: Agent() = %v; want ErrInvalid naming %s", tc.name, err, tc.field)
		}
	}
	// The opt-ins are config keys, strict like every other.
	path := filepath.Join(t.TempDir(), "edge.json")
	if err := os.WriteFile(path, []byte(`{"insecure":{"open_status":true,"plain_broker":true}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if f, err := Load(path); err != nil || !f.Insecure.OpenStatus || !f.Insecure.PlainBroker {
		t.Errorf("Load(insecure opt-ins) = %+v, %v; want both set", f.Insecure, err)
	}
}

func TestThingFlag(t *testing.T) {
	var f File
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	Flags(fs, &f)
	if err := fs.Parse([]string{"--thing", "bowl-1=gw-1:kitchen", "--thing", "bowl-2=gw-1:hall"}); err != nil {
		t.Fatal(err)
	}
	if f.Things["bowl-1"] != "gw-1:kitchen" || f.Things["bowl-2"] != "gw-1:hall" || len(f.Things) != 2 {
		t.Fatalf("Things = %v; want bowl-1 and bowl-2 mapped", f.Things)
	}
	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	Flags(fs, &f)
	if err := fs.Parse([]string{"--thing", "bowl-3"}); err == nil || !strings.Contains(err.Error(), "DEVICE=THING") {
		t.Fatalf("--thing bowl-3 = %v; want an error asking for DEVICE=THING", err)
	}
}
