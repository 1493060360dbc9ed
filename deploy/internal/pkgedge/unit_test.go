package pkgedge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bowline-iot/bowline/edge/config"
)

// unitDirectives parses a systemd unit into section.key -> values.
func unitDirectives(t *testing.T, text string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	section := ""
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("unit line %d %q: want key=value inside a section", i+1, line)
			}
			out[section+"."+k] = append(out[section+"."+k], v)
		}
	}
	return out
}

// TestUnitHardening lints the systemd unit: a dedicated user, the outbox in
// its StateDirectory (the same folder as the default config's outbox path),
// a read-only system, no capabilities, a restart policy, and a watchdog
// only if the agent speaks sd_notify.
func TestUnitHardening(t *testing.T) {
	root := repoRoot(t)
	text, err := os.ReadFile(filepath.Join(root, EdgeDir, "bowline-edge.service"))
	if err != nil {
		t.Fatal(err)
	}
	u := unitDirectives(t, string(text))
	for key, want := range map[string]string{
		"Service.User":                  "bowline-edge",
		"Service.StateDirectory":        "bowline-edge",
		"Service.ProtectSystem":         "strict",
		"Service.ProtectHome":           "yes",
		"Service.NoNewPrivileges":       "yes",
		"Service.PrivateTmp":            "yes",
		"Service.CapabilityBoundingSet": "",
		"Service.Restart":               "always",
		"Service.DevicePolicy":          "closed",
		"Service.EnvironmentFile":       IdentityPath,
		"Unit.ConditionPathExists":      IdentityPath,
		"Install.WantedBy":              "multi-user.target",
	} {
		if got := u[key]; len(got) != 1 || got[0] != want {
			t.Errorf("%s = %q; want %q", key, got, want)
		}
	}
	sysusers, err := os.ReadFile(filepath.Join(root, EdgeDir, "sysusers.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sysusers), "u bowline-edge ") {
		t.Errorf("sysusers.conf does not create the unit's user bowline-edge")
	}
	file, err := config.Load(filepath.Join(root, EdgeDir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if dir := filepath.Dir(file.Outbox.Path); dir != "/var/lib/"+u["Service.StateDirectory"][0] {
		t.Errorf("default outbox %s is outside StateDirectory /var/lib/%s (ProtectSystem=strict makes it read-only)", file.Outbox.Path, u["Service.StateDirectory"][0])
	}
	if file.Outbox.Path != config.DefaultOutboxPath {
		t.Errorf("default config outbox %s; want the agent's default %s", file.Outbox.Path, config.DefaultOutboxPath)
	}
	notify := false
	filepath.WalkDir(filepath.Join(root, "edge"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			b, _ := os.ReadFile(p)
			notify = notify || strings.Contains(string(b), "NOTIFY_SOCKET")
		}
		return nil
	})
	_, watchdog := u["Service.WatchdogSec"]
	switch {
	case notify && (!watchdog || u["Service.Type"][0] != "notify"):
		t.Errorf("the agent speaks sd_notify now: set Type=notify and WatchdogSec in the unit")
	case !notify && (watchdog || u["Service.Type"][0] == "notify"):
		t.Errorf("the unit sets a watchdog or Type=notify but the agent does not speak sd_notify")
	}
}
