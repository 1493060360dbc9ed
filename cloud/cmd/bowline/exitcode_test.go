package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// TestBadInputExitsTwo runs every subcommand as a process with bad input:
// each must exit 2 (the README's "bad usage or configuration"), naming
// the input at fault and, where there is a choice, the valid values.
func TestBadInputExitsTwo(t *testing.T) {
	lstest.Stack(t) // the unknown-tenant checks read the stack
	bin := bowlineBin(t)
	nosuch := "nosuch-" + randHex(4)
	tests := []struct {
		args []string
		want []string // in stderr
	}{
		{nil, []string{"Commands:"}},
		{[]string{"nosuch"}, []string{`unknown command "nosuch"`, "verify-chain"}},
		{[]string{"emit", "--type", "bowl.empty"}, []string{"--tenant is required"}},
		{[]string{"emit", "--tenant", "t", "--type", "bowl.exploded"}, []string{`"bowl.exploded"`, "bowl.meal_finished", "com.order_created"}},
		{[]string{"emit", "--tenant", "t", "--type", "bowl.meal_finished", "--payload", "{}"}, []string{`missing field "grams_eaten"`}},
		{[]string{"emit", "--tenant", "t", "--type", "bowl.refilled", "--payload", `{"grams_added":-5,"level_g":1}`}, []string{"grams_added", "negative"}},
		{[]string{"emit", "--tenant", "t", "--type", "com.order_created", "--payload", `{"order_id":"o1"}`}, []string{`missing field "customer_id"`}},
		{[]string{"emit", "--tenant", "a#b", "--type", "bowl.empty"}, []string{`"a#b"`}},
		{[]string{"emit", "--tenant", "t", "--type", "bowl.empty", "--payload", "{"}, []string{"not valid JSON"}},
		{[]string{"emit", "--bogus"}, []string{"bogus"}},
		{[]string{"verify-chain"}, []string{"--tenant or --all"}},
		{[]string{"verify-chain", "--tenant", nosuch}, []string{"unknown tenant", nosuch, "known tenants:"}},
		{[]string{"verify-chain", "--tenant", "a#b"}, []string{`"a#b"`}},
		{[]string{"dead-letters", "--tenant", nosuch}, []string{"unknown tenant", nosuch, "known tenants:"}},
		{[]string{"dead-letters", "--source", "cloud"}, []string{`"cloud"`, "ingest or worker"}},
		{[]string{"dead-letters", "replay"}, []string{"--source"}},
		{[]string{"redrive"}, []string{"--event"}},
		{[]string{"anchor"}, []string{"--once", "--every"}},
		{[]string{"catalog", "extra"}, []string{`"extra"`}},
		{[]string{"devices"}, []string{"register"}},
		{[]string{"devices", "register", "--thing", "b1"}, []string{"--tenant"}},
		{[]string{"relay", "--pipes", "nosuch"}, []string{`"nosuch"`, "events", "record-changes"}},
		{[]string{"worker", "--inbox", "seed"}, []string{"-inbox"}}, // the seed inbox is the chaos harness's (cloud/bench/chaos/seedworker)
		{[]string{"dev", "--bowls", "-1"}, []string{"bowls"}},
		{[]string{"dev", "--speed", "-1"}, []string{"speed"}},
		{[]string{"rules", "--legacy-telemetry-v1=maybe"}, []string{"legacy-telemetry-v1"}},
		{[]string{"consume", "--ack-every", "-1s"}, []string{"ack-every"}},
		{[]string{"ingest", "--gap-grace", "0s"}, []string{"gap-grace"}},
		{[]string{"rules", "--key", "-----BEGIN PRIVATE KEY-----"}, []string{"--key"}},
		{[]string{"iot-endpoint"}, []string{"--broker"}},
		{[]string{"provision", "extra"}, []string{`"extra"`}},
		{[]string{"api", "extra"}, []string{`"extra"`}},
		{[]string{"order"}, []string{"create or pay"}},
		{[]string{"order", "create"}, []string{"--tenant is required"}},
		{[]string{"order", "pay"}, []string{"--order is required"}},
		{[]string{"dev", "fail"}, []string{"<provider> <status|ok>", "shopify"}},
		{[]string{"dev", "fail", "nosuch", "503"}, []string{`"nosuch"`, "notify, shipping, shopify"}},
		{[]string{"dev", "fail", "shopify", "999"}, []string{`"999"`, "100-599"}},
		{[]string{"dev", "--shop-fail-rate", "2"}, []string{"--shop-fail-rate"}},
		{[]string{"completeness"}, []string{"--thing is required"}},
		{[]string{"completeness", "--thing", nosuch}, []string{"unknown thing", nosuch}},
		{[]string{"completeness", "--thing", "b1", "--day", "yesterday"}, []string{`"yesterday"`, "YYYY-MM-DD"}},
	}
	for _, tt := range tests {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // hang guard
		cmd := exec.Command(bin, tt.args...)
		cmd.Env = os.Environ()
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := testkit.RunChild(ctx, t, "bowline", cmd)
		cancel()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("bowline %v: %v", tt.args, err)
		}
		out := stderr.String() + stdout.String()
		if code != 2 {
			t.Errorf("bowline %s: exit %d; want 2\n%s", strings.Join(tt.args, " "), code, out)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("bowline %s said\n%s\nwant it to mention %q", strings.Join(tt.args, " "), out, w)
			}
		}
	}
}
