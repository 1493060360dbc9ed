package dev

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/resources"
)

func TestSetDefaults(t *testing.T) {
	c := Config{Names: resources.Names{Stack: "x"}}
	if err := c.setDefaults(); err != nil {
		t.Fatalf("setDefaults: %v", err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if c.Bowls != DefaultBowls || c.Speed != 1 || c.RateHz != 50 || c.Every != 5*time.Second || c.APIAddr != api.DefaultAddr {
		t.Errorf("defaults bowls %d speed %v rate %d every %v addr %q; want %d, 1, 50, 5s, %q", c.Bowls, c.Speed, c.RateHz, c.Every, c.APIAddr, DefaultBowls, api.DefaultAddr)
	}
	if got := strings.Join(c.Tenants, ","); got != "tenant-1,tenant-2" {
		t.Errorf("tenants %q; want tenant-1,tenant-2", got)
	}
	perTenant := map[string]int{}
	for tok, tenant := range c.Settings.Tokens {
		if !strings.HasPrefix(tok, "dev_"+tenant+"_") {
			t.Errorf("token %q for %s; want a generated dev_%s_... token", tok, tenant, tenant)
		}
		perTenant[tenant]++
	}
	if len(perTenant) != 2 || perTenant["tenant-1"] != 1 || c.Settings.WebhookSecret == "" || c.Settings.OpsToken == "" {
		t.Errorf("settings %+v; want one token per tenant, a webhook secret and an ops token", c.Settings)
	}
}

func TestSetDefaultsKeepsGivenSecretsAndTakesTenantsFromTokens(t *testing.T) {
	c := Config{Names: resources.Names{Stack: "x"}, Settings: api.Settings{
		Tokens: map[string]string{"a": "shop-b", "b": "shop-a", "c": "shop-a"}, WebhookSecret: "s", OpsToken: "o", Addr: "127.0.0.1:0"}}
	if err := c.setDefaults(); err != nil {
		t.Fatalf("setDefaults: %v", err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if got := strings.Join(c.Tenants, ","); got != "shop-a,shop-b" {
		t.Errorf("tenants %q; want shop-a,shop-b (from the tokens)", got)
	}
	if len(c.Settings.Tokens) != 3 || c.Settings.WebhookSecret != "s" || c.Settings.OpsToken != "o" || c.APIAddr != "127.0.0.1:0" {
		t.Errorf("settings %+v, addr %q; want the given ones kept", c.Settings, c.APIAddr)
	}
}

func TestValidateRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Config
		want string
	}{
		{"negative bowls", Config{Bowls: -1}, "bowls -1"},
		{"negative speed", Config{Speed: -2}, "speed -2"},
		{"rate", Config{RateHz: 51}, "rate 51 Hz"},
		{"empty tenant", Config{Tenants: []string{"a", ""}}, "empty tenant"},
		{"api address", Config{APIAddr: "8080"}, `api address "8080"`},
		{"duration", Config{Duration: -time.Second}, "duration -1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.Names = resources.Names{Stack: "x"}
			err := tc.c.Validate()
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v; want ErrConfig naming %q", err, tc.want)
			}
		})
	}
}

func TestFutureSkew(t *testing.T) {
	for _, tc := range []struct {
		speed float64
		dur   time.Duration
		want  time.Duration
	}{
		{1, 0, 5 * time.Minute},
		{1, 48 * time.Hour, 5 * time.Minute},
		{60, 24 * time.Hour, 24*time.Hour + 5*time.Minute},
		{60, 0, fastFutureSkew},
	} {
		c := Config{Speed: tc.speed, Duration: tc.dur}
		if got := c.futureSkew(); got != tc.want {
			t.Errorf("futureSkew(speed %v, duration %v) = %v; want %v", tc.speed, tc.dur, got, tc.want)
		}
	}
}

func TestPlanBowlsRoundRobin(t *testing.T) {
	c := Config{Bowls: 5, Tenants: []string{"a", "b"}}
	var got []string
	for _, b := range planBowls(&c, "/d") {
		got = append(got, b.Thing+"@"+b.Tenant+":"+b.Socket)
	}
	want := "gw-000:bowl-000@a:/d/bowl-000.sock gw-001:bowl-001@b:/d/bowl-001.sock gw-002:bowl-002@a:/d/bowl-002.sock gw-003:bowl-003@b:/d/bowl-003.sock gw-004:bowl-004@a:/d/bowl-004.sock"
	if strings.Join(got, " ") != want {
		t.Errorf("plan %q; want %q", strings.Join(got, " "), want)
	}
}

func TestSimClockFrozenUntilStartThenScaled(t *testing.T) {
	start := time.Date(2026, 1, 5, 6, 0, 0, 0, time.UTC)
	c := &simClock{start: start, speed: 3600}
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now before the simulation = %v; want %v", got, start)
	}
	c.began.Store(time.Now().Add(-time.Second).UnixNano())
	if got := c.Now(); got.Before(start.Add(time.Hour)) {
		t.Errorf("Now a second in at 3600x = %v; want at least %v", got, start.Add(time.Hour))
	}
}

func TestFiguresLine(t *testing.T) {
	f := Figures{At: time.Date(2026, 1, 5, 6, 7, 8, 0, time.UTC), SimTime: time.Date(2026, 1, 6, 7, 30, 0, 0, time.UTC),
		Samples: 1200, TelemetryMessages: 12, Emitted: 7, Duplicates: 1, Rejected: 2, Completed: 9, Retried: 3, Dead: 4,
		ChainsIntact: 2, ChainsChecked: 2, ChainsAt: time.Now(), DLQDepth: 1}
	want := "06:07:08 sim 2026-01-06 07:30 | samples->kinesis 1200 (12 msgs) | events emitted 7 (dup 1, rejected 2) | deliveries ok 9, retried 3, dead 4 | chains 2/2 intact | dlq 1"
	if got := f.Line(); got != want {
		t.Errorf("Line() = %q; want %q", got, want)
	}
	f.ChainsAt, f.DLQDepth, f.SimTime = time.Time{}, -1, time.Time{}
	if got := f.Line(); !strings.HasSuffix(got, "| chains - | dlq ?") || strings.Contains(got, "sim") {
		t.Errorf("Line() before any chain pass, DLQ unreadable = %q; want chains - and dlq ?", got)
	}
}

type fakeChains map[string]bool

func (f fakeChains) Tenants(context.Context) ([]string, error) {
	var ts []string
	for t := range f {
		ts = append(ts, t)
	}
	return ts, nil
}

func (f fakeChains) VerifyChain(_ context.Context, t string) (engine.ChainReport, error) {
	return engine.ChainReport{Intact: f[t]}, nil
}

func TestChainWatchPass(t *testing.T) {
	w := &chainWatch{v: fakeChains{"a": true, "b": false, "c": true}}
	intact, checked, err := w.pass(context.Background())
	if err != nil || intact != 2 || checked != 3 {
		t.Errorf("pass = %d intact of %d, %v; want 2 of 3", intact, checked, err)
	}
}

type fakeDLQ map[string]string

func (f fakeDLQ) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{Attributes: f}, nil
}

func TestDLQDepthCountsInFlight(t *testing.T) {
	n, err := dlqDepth(context.Background(), fakeDLQ{"ApproximateNumberOfMessages": "2", "ApproximateNumberOfMessagesNotVisible": "3"}, "q")
	if err != nil || n != 5 {
		t.Errorf("dlqDepth = %d, %v; want 5 (visible plus in flight)", n, err)
	}
}
