package dev_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/cloud/dev"
)

// The short report a person sees first leads with the console's one-click
// login; the tokens and endpoints are only in the details (--verbose).
func TestReportLeadsWithTheConsole(t *testing.T) {
	var r dev.Report
	r.Console.URL, r.Console.LoginURL = "http://127.0.0.1:8080/console/", "http://127.0.0.1:8080/console/login?token=ops_x"
	r.Stack, r.Tenants = "dev", []string{"tenant-1", "tenant-2"}
	r.Bowls = []*dev.Bowl{{Thing: "bowl-000", Tenant: "tenant-1"}, {Thing: "bowl-001", Tenant: "tenant-2"}}
	r.API.URL, r.API.OpsToken, r.API.WebhookSecret = "http://127.0.0.1:8080", "ops_x", "whsec_secret"
	r.API.Tokens = map[string]string{"tok_a": "tenant-1"}
	r.Sim.Start, r.Sim.Speed = time.Date(2026, 1, 5, 7, 0, 0, 0, time.UTC), 30
	r.Env = []string{"BOWLINE_STACK=dev"}
	var short, long bytes.Buffer
	r.WriteText(&short)
	r.WriteDetails(&long)
	lines := strings.Split(strings.TrimSpace(short.String()), "\n")
	if len(lines) > 8 || !strings.Contains(lines[0], "console") || !strings.Contains(short.String(), r.Console.LoginURL) {
		t.Errorf("short report (%d lines):\n%s\nwant at most 8 lines, the console and its login URL first", len(lines), short.String())
	}
	if i := strings.Index(short.String(), r.Console.LoginURL); i > strings.Index(short.String(), "simulated bowls") {
		t.Errorf("short report names the bowls before the login URL:\n%s", short.String())
	}
	if strings.Contains(short.String(), "whsec_secret") || strings.Contains(short.String(), "tok_a") {
		t.Errorf("short report prints secrets; want them only with --verbose:\n%s", short.String())
	}
	for _, want := range []string{r.Console.LoginURL, "whsec_secret", "tok_a", "export "} {
		if !strings.Contains(long.String(), want) {
			t.Errorf("detailed report lacks %q:\n%s", want, long.String())
		}
	}
}

func TestValidateRejectsANegativeFirstMeal(t *testing.T) {
	cfg := dev.Config{FirstMealAfter: -time.Minute}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "first meal") {
		t.Errorf("Validate(FirstMealAfter -1m) = %v; want an error naming the first meal", err)
	}
}
