package config

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFileAndFlags(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "edge.json")
	body := `{"tenant":"t1","gateway":"gw-1","broker":"tcp://127.0.0.1:1883",
	  "inputs":["serial:/dev/ttyAMA0@115200"],
	  "outbox":{"path":"` + filepath.Join(dir, "o.db") + `","max_bytes":1048576,"telemetry_ttl":"48h"},
	  "mqtt":{"rate":50,"keepalive":"45s"}}`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	Flags(fs, &f)
	if err := fs.Parse([]string{"--mqtt-rate", "20", "--input", "unix:/run/b.sock"}); err != nil {
		t.Fatal(err)
	}
	c, err := f.Agent()
	if err != nil {
		t.Fatal(err)
	}
	if c.Forward.Rate != 20 || c.Forward.KeepAlive != 45*time.Second || c.Outbox.MaxBytes != 1<<20 || c.Outbox.TelemetryTTL != 48*time.Hour {
		t.Fatalf("config = %+v / %+v; want flag rate 20 over file 50, keepalive 45s, cap 1 MiB, ttl 48h", c.Forward, c.Outbox)
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
		c.edit(&f)
		_, err := f.Agent()
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Agent() = %v; want ErrInvalid saying %s", err, c.want)
		}
	}
}
