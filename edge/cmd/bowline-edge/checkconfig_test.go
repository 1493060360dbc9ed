package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{"tenant":"t1","gateway":"gw-1","broker":"tcp://127.0.0.1:1883",
	  "inputs":["unix:/run/bowl.sock"],"things":{"bowl-1":"gw-1:kitchen"},
	  "outbox":{"path":"`+filepath.Join(dir, "o.db")+`"},"telemetry":{"rule":"bowline_dev_telemetry"}}`)
	code, out := runAgent(t, "check-config", "--config", good)
	if code != 0 || !strings.Contains(out, "config ok: tenant t1, gateway gw-1") || !strings.Contains(out, "things   1 mapped") {
		t.Fatalf("check-config good.json: exit %d\n%s\nwant 0 and a summary", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "o.db")); !os.IsNotExist(err) {
		t.Errorf("check-config created the outbox file (stat: %v); want nothing opened", err)
	}

	tests := []struct {
		name  string
		args  []string
		field string
	}{
		{"bad wire", []string{"--config", good, "--telemetry-wire", "v3"}, "telemetry.wire"},
		{"no tenant", []string{"--config", write("notenant.json", `{"gateway":"gw-1","broker":"tcp://127.0.0.1:1","inputs":["unix:/x"]}`)}, "tenant"},
		{"missing CA", []string{"--config", good, "--broker", "ssl://example.com:8883", "--tls-ca", filepath.Join(dir, "none.pem")}, "tls.ca"},
		{"unknown field", []string{"--config", write("typo.json", `{"tenant":"t1","outbx":{}}`)}, "outbx"},
		{"wrong type", []string{"--config", write("type.json", `{"tenant":"t1","mqtt":{"rate":"fast"}}`)}, "mqtt.rate"},
		{"bad thing flag", []string{"--config", good, "--thing", "bowl-2"}, "DEVICE=THING"},
		{"no such file", []string{"--config", filepath.Join(dir, "none.json")}, "none.json"},
	}
	for _, tt := range tests {
		code, out := runAgent(t, append([]string{"check-config"}, tt.args...)...)
		if code != 2 || !strings.Contains(out, tt.field) {
			t.Errorf("check-config %s: exit %d\n%s\nwant exit 2 naming %s", tt.name, code, out, tt.field)
		}
	}
}
