package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bowline-iot/bowline/deploy/cfn/iamtest"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/enginetest"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/cli"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/resources"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// TestAnchorCommand runs `bowline anchor` and `bowline verify-chain` as
// processes: anchors a chain event by event, rewrites event 2 and reseals
// every later hash and the head with raw DynamoDB writes, and checks that
// verify-chain --all fails naming the tenant and seq 2, that anchor --once
// refuses to anchor it, and that anchor --every stops cleanly on SIGTERM.
// Their AWS calls are checked against AnchorRole and OperatorRole.
func TestAnchorCommand(t *testing.T) {
	testkit.Long(t, "runs the bowline binary")
	iamtest.Record(t)
	bin := bowlineBin(t)
	names := freshStack(t)
	ctx := enginetest.Ctx(t)
	ddb := dynamodb.NewFromConfig(lstest.AWSConfig(t), awsenv.DynamoDBOptions)
	env := append(os.Environ(), resources.StackEnv+"="+names.Stack)
	runBin := func(args ...string) (string, error) {
		t.Helper()
		return runBinary(ctx, t, bin, env, args...)
	}
	exitCode := func(err error) int {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	}
	tn := tenant()
	write := func(prev string, envs []engine.Envelope) {
		t.Helper()
		for i := range envs {
			if err := engine.Seal(&envs[i], prev); err != nil {
				t.Fatal(err)
			}
			if err := enginetest.PutEventRow(ctx, ddb, names.EventsTable(), envs[i]); err != nil {
				t.Fatal(err)
			}
			prev = envs[i].Hash
		}
	}
	var chain []engine.Envelope
	prev := engine.Genesis
	for seq := uint64(1); seq <= 3; seq++ {
		e := []engine.Envelope{enginetest.Envelope(t, tn, "t.happened", seq, nil)}
		write(prev, e)
		chain, prev = append(chain, e[0]), e[0].Hash
		out, err := runBin("anchor", "--once", "--json")
		var rep struct{ Tenants, Anchored int }
		if exitCode(err) != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Tenants != 1 || rep.Anchored != 1 {
			t.Fatalf("bowline anchor --once --json after seq %d printed %q (%v); want 1 tenant anchored", seq, out, err)
		}
	}
	if out, err := runBin("verify-chain", "--tenant", tn); exitCode(err) != 0 || !strings.Contains(out, tn+": intact, 3 events, head seq 3, 3 anchors") {
		t.Fatalf("verify-chain before tampering printed %q (%v); want intact against 3 anchors", out, err)
	}

	forged := []engine.Envelope{chain[1], chain[2]}
	forged[0].Payload = map[string]any{"n": float64(200)}
	write(chain[0].Hash, forged)

	out, err := runBin("verify-chain", "--all", "--json")
	var res verifyResult
	if exitCode(err) != 1 || json.Unmarshal([]byte(out), &res) != nil || len(res.Tenants) != 1 {
		t.Fatalf("verify-chain --all --json after reseal printed %q (%v); want exit 1 and one tenant", out, err)
	}
	if got := res.Tenants[0]; got.Tenant != tn || got.Intact || got.FirstBadSeq != 2 || got.Reason != engine.ReasonAnchorMismatch {
		t.Errorf("verify-chain after reseal = %+v; want tenant %s broken at seq 2, %s", got, tn, engine.ReasonAnchorMismatch)
	}
	if out, err := runBin("anchor", "--once"); exitCode(err) != 1 || !strings.Contains(out, tn+": BROKEN at seq 3") {
		t.Errorf("bowline anchor --once after reseal printed %q (%v); want exit 1 naming %s broken at its anchored seq 3", out, err, tn)
	}

	p := startProc(t, bin, env, "anchor", "--every", "1s")
	p.waitLine(t, "anchor round")
	p.stop(t)
}

func TestAnchorBadFlags(t *testing.T) {
	anchorRun := func(ctx context.Context, args []string, out *bytes.Buffer) error { return anchorCmd(ctx, args, out) }
	for _, args := range [][]string{
		{},
		{"--once", "--every", "5m"},
		{"--every", "10ms"},
		{"--once", "--page-size", "0"},
		{"--once", "extra"},
	} {
		if _, err := run(t, anchorRun, args...); !errors.Is(err, cli.ErrUsage) {
			t.Errorf("anchor %v = %v; want a usage error", args, err)
		}
	}
	if _, err := run(t, anchorRun, "--help"); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("anchor --help = %v; want flag.ErrHelp", err)
	}
}
