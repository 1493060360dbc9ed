package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/cli"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
)

// TestDevTamperThenVerify is the README tour's last step: an event
// rewritten behind the engine's back is found by verify-chain at its seq.
func TestDevTamperThenVerify(t *testing.T) {
	lstest.Stack(t)
	tn := tenant()
	for range 2 {
		if out, err := run(t, emit, "--tenant", tn, "--type", "bowl.refilled", "--payload", `{"grams_added":120,"level_g":300}`); err != nil {
			t.Fatalf("emit: %v\n%s", err, out)
		}
	}
	tamper := func(ctx context.Context, args []string, out *bytes.Buffer) error { return devTamperCmd(ctx, args, out) }
	if out, err := run(t, tamper, "--tenant", tn, "--seq", "2"); err != nil {
		t.Fatalf("dev tamper: %v\n%s", err, out)
	}
	out, err := run(t, verify, "--tenant", tn, "--json")
	var res verifyResult
	if jerr := json.Unmarshal([]byte(out), &res); jerr != nil {
		t.Fatalf("verify-chain --json printed %q: %v", out, jerr)
	}
	if !errors.Is(err, errChainBroken) || len(res.Tenants) != 1 || res.Tenants[0].FirstBadSeq != 2 || res.Tenants[0].Reason != engine.ReasonHashMismatch {
		t.Errorf("verify-chain after dev tamper --seq 2 = %+v, %v; want broken at seq 2 (hash mismatch)", res, err)
	}

	if _, err := run(t, tamper, "--tenant", tn, "--seq", "9"); !errors.Is(err, cli.ErrUsage) {
		t.Errorf("dev tamper of a seq that does not exist = %v; want a usage error", err)
	}
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "https://dynamodb.eu-west-1.amazonaws.com")
	if _, err := run(t, tamper, "--tenant", tn, "--seq", "1"); !errors.Is(err, cli.ErrUsage) {
		t.Errorf("dev tamper against a non-loopback endpoint = %v; want refused (usage error)", err)
	}
}
