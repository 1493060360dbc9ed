package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/cli"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
)

var n atomic.Int64

func tenant() string { return fmt.Sprintf("cli%d-%d", time.Now().UnixNano()%1e9, n.Add(1)) }

func run(t *testing.T, f func(context.Context, []string, *bytes.Buffer) error, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // hang guard
	defer cancel()
	var out bytes.Buffer
	err := f(ctx, args, &out)
	return out.String(), err
}

func emit(ctx context.Context, args []string, out *bytes.Buffer) error {
	return emitCmd(ctx, args, out)
}

func verify(ctx context.Context, args []string, out *bytes.Buffer) error {
	return verifyChainCmd(ctx, args, out)
}

func TestEmitThenVerifyChain(t *testing.T) {
	lstest.Stack(t)
	tn := tenant()
	out, err := run(t, emit, "--tenant", tn, "--type", "bowl.refilled", "--payload", `{"grams_added":120,"level_g":300}`, "--json")
	if err != nil {
		t.Fatalf("emit: %v\n%s", err, out)
	}
	var env engine.Envelope
	if err := json.Unmarshal([]byte(out), &env); err != nil || env.Seq != 1 || env.Tenant != tn || env.Actor != "cli" {
		t.Fatalf("emit --json printed %s (%v); want seq 1 for %s by cli", out, err, tn)
	}
	for i := 0; i < 2; i++ {
		out, err = run(t, emit, "--tenant", tn, "--type", "bowl.empty", "--idempotency-key", "k1")
		if err != nil {
			t.Fatalf("emit with key, run %d: %v", i, err)
		}
	}
	if !strings.Contains(out, "duplicate") {
		t.Errorf("second emit with the same key printed %q; want a duplicate notice", out)
	}

	out, err = run(t, verify, "--tenant", tn)
	if err != nil || !strings.Contains(out, tn+": intact, 2 events") {
		t.Fatalf("verify-chain = %q, %v; want intact with 2 events", out, err)
	}
	out, err = run(t, verify, "--all", "--json")
	if err != nil || !strings.Contains(out, `"tenant": "`+tn+`"`) {
		t.Errorf("verify-chain --all --json = %s, %v; want it to list %s", out, err, tn)
	}

	// Delete seq 1 behind the engine's back: verify-chain names it and fails.
	cfg := lstest.AWSConfig(t)
	_, err = dynamodb.NewFromConfig(cfg).DeleteItem(context.Background(), &dynamodb.DeleteItemInput{
		TableName: aws.String(lstest.Names(t).EventsTable()),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: engine.EventPK(tn)},
			"sk": &types.AttributeValueMemberS{Value: engine.SeqSK(1)},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err = run(t, verify, "--tenant", tn, "--json")
	var res verifyResult
	if jerr := json.Unmarshal([]byte(out), &res); jerr != nil {
		t.Fatalf("verify-chain --json printed %q: %v", out, jerr)
	}
	if !errors.Is(err, errChainBroken) || res.Intact || len(res.Tenants) != 1 ||
		res.Tenants[0].FirstBadSeq != 1 || res.Tenants[0].Reason != engine.ReasonGap {
		t.Errorf("verify-chain after deleting seq 1 = %+v, %v; want broken at seq 1 (gap) and errChainBroken", res, err)
	}
}

func TestEmitBadInput(t *testing.T) {
	lstest.Stack(t)
	tests := []struct {
		args []string
		want error
		msg  string
	}{
		{[]string{"--type", "bowl.empty"}, cli.ErrUsage, "--tenant"},
		{[]string{"--tenant", "t"}, cli.ErrUsage, "--type"},
		{[]string{"--tenant", "t", "--type", "bowl.empty", "--payload", "{"}, cli.ErrUsage, "not valid JSON"},
		{[]string{"--tenant", "t", "--type", "bowl.empty", "--payload", "[1]"}, cli.ErrUsage, "not a JSON object"},
		{[]string{"--tenant", "t", "--type", "bowl.exploded"}, cli.ErrUsage, "bowl.meal_finished"},
		{[]string{"--tenant", "a#b", "--type", "bowl.empty"}, cli.ErrUsage, "a#b"},
		{[]string{"--tenant", "t", "--type", "bowl.meal_finished"}, cli.ErrUsage, `missing field "grams_eaten"`},
		{[]string{"--tenant", "t", "--type", "bowl.meal_finished", "--payload", `{"grams_eaten":12,"duration_s":60,"started_at":"2999-01-01T00:00:00Z","pet_tag":""}`}, cli.ErrUsage, "in the future"},
		{[]string{"--tenant", "t", "--type", "com.payment_completed", "--payload", `{"order_id":"o1","colour":"red"}`}, cli.ErrUsage, `unknown field "colour"`},
		{[]string{"--tenant", "t", "--type", "com.order_created", "--payload", `{"order_id":"o1","customer_id":"c","pet_id":"p","items":[],"amount_cents":"lots","currency":"USD"}`}, cli.ErrUsage, `amount_cents`},
	}
	for _, tt := range tests {
		_, err := run(t, emit, tt.args...)
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("emit %v = %v; want %v mentioning %q", tt.args, err, tt.want, tt.msg)
		}
	}
	if _, err := run(t, verify); !errors.Is(err, cli.ErrUsage) {
		t.Errorf("verify-chain without --tenant or --all = %v; want a usage error", err)
	}
	if _, err := run(t, emit, "--help"); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("emit --help = %v; want flag.ErrHelp", err)
	}
}

func TestCatalogCommand(t *testing.T) {
	var out bytes.Buffer
	if err := catalogCmd(context.Background(), nil, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "com.payment_completed") || !strings.Contains(out.String(), "notify_buyer(DURABLE)") {
		t.Errorf("catalog printed %q; want com.payment_completed with notify_buyer(DURABLE)", out.String())
	}
	out.Reset()
	if err := catalogCmd(context.Background(), []string{"--check"}, &out); err != nil {
		t.Errorf("catalog --check = %v (%s); want ok", err, out.String())
	}

	out.Reset()
	if err := catalogCmd(context.Background(), []string{"--markdown"}, &out); err != nil {
		t.Errorf("catalog --markdown = %v; want nil", err)
	}
	var md strings.Builder
	if err := catalog.WriteMarkdown(&md, catalog.Bowline()); err != nil {
		t.Fatal(err)
	}
	if out.String() != md.String() || !strings.Contains(out.String(), "`catalog.PaymentCompleted`") {
		t.Errorf("catalog --markdown printed %q; want catalog.WriteMarkdown's tables, naming catalog.PaymentCompleted", out.String())
	}
	if err := catalogCmd(context.Background(), []string{"--markdown", "--json"}, io.Discard); !errors.Is(err, cli.ErrUsage) {
		t.Errorf("catalog --markdown --json = %v; want a usage error", err)
	}

	c := catalog.Bowline()
	c.Subscriptions = append(c.Subscriptions, engine.Subscription{Name: "late_meals", Pattern: "bowl.meal_finish", Lane: engine.Durable})
	out.Reset()
	err := catalogOf(context.Background(), c, []string{"--check", "--json"}, &out)
	var res catalogResult
	if jerr := json.Unmarshal(out.Bytes(), &res); jerr != nil {
		t.Fatalf("catalog --check --json printed %q: %v", out.String(), jerr)
	}
	if !errors.Is(err, errContract) || res.OK || len(res.Violations) != 1 || !strings.Contains(res.Violations[0], `"bowl.meal_finish"`) {
		t.Errorf("catalog --check with a wildcard-less glob = %+v, %v; want one violation naming bowl.meal_finish", res, err)
	}
}
