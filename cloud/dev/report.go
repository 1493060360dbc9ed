package dev

import (
	"encoding/json"
	"fmt"
	"github.com/bowline-iot/bowline/cloud/api"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/bowline-iot/bowline/internal/provision"
	"github.com/bowline-iot/bowline/internal/resources"
)

// Report is where everything listens: Run prints it at start (as JSON
// with Config.JSON).
type Report struct {
	// Console is the web console; LoginURL logs a browser in with one
	// click.
	Console struct {
		URL      string `json:"url"`
		LoginURL string `json:"login_url"`
	} `json:"console"`
	Stack     string `json:"stack"`
	Endpoints struct {
		DynamoDB string `json:"dynamodb"`
		SQS      string `json:"sqs"`
		Kinesis  string `json:"kinesis"`
		MQTT     string `json:"mqtt"`
	} `json:"endpoints"`
	// EmulatorPids are the emulator child processes (none when the stack
	// was not started by this run).
	EmulatorPids []int                `json:"emulator_pids"`
	Resources    []provision.Resource `json:"resources"`
	API          struct {
		URL        string `json:"url"`
		MetricsURL string `json:"metrics_url"`
		// Tokens maps each bearer token to its tenant.
		Tokens        map[string]string `json:"tokens"`
		WebhookSecret string            `json:"webhook_secret"`
		OpsToken      string            `json:"ops_token"`
	} `json:"api"`
	// Fakes maps each fake provider to its base URL.
	Fakes   map[string]string `json:"fakes"`
	Tenants []string          `json:"tenants"`
	Bowls   []*Bowl           `json:"bowls"`
	Sim     struct {
		Start  time.Time `json:"start"`
		Speed  float64   `json:"speed"`
		RateHz int       `json:"rate_hz"`
		Seed   uint64    `json:"seed"`
	} `json:"sim"`
	DataDir string `json:"data_dir"`
	// Env is what another shell exports to use this stack.
	Env []string `json:"env"`
}

// Report describes the running system.
func (s *System) Report() Report {
	var r Report
	st := s.stack
	r.Console.URL, r.Console.LoginURL = s.ConsoleURL(), s.LoginURL()
	r.Stack = s.cfg.Names.Stack
	r.Endpoints.DynamoDB, r.Endpoints.SQS, r.Endpoints.Kinesis, r.Endpoints.MQTT = st.DynamoDBEndpoint, st.SQSEndpoint, st.KinesisEndpoint, st.MQTTAddr
	if st.owned {
		r.EmulatorPids = st.Pids()
	}
	r.Resources = st.report.Resources
	r.API.URL, r.API.MetricsURL = s.apiURL, s.metrics
	r.API.Tokens, r.API.WebhookSecret, r.API.OpsToken = s.cfg.Settings.Tokens, s.cfg.Settings.WebhookSecret, s.cfg.Settings.OpsToken
	r.Fakes = map[string]string{"shopify": s.fakes.ShopifyURL, "shipping": s.fakes.ShippingURL, "notify": s.fakes.NotifyURL}
	r.Tenants, r.Bowls = s.cfg.Tenants, s.plan
	r.Sim.Start, r.Sim.Speed, r.Sim.RateHz, r.Sim.Seed = s.cfg.Start, s.cfg.Speed, s.cfg.RateHz, s.cfg.Seed
	r.DataDir = s.cfg.DataDir
	r.Env = append(st.Env(), resources.StackEnv+"="+s.cfg.Names.Stack)
	r.Env = append(r.Env, s.fakes.Env()...)
	// What `bowline order` needs: the API, the tenants' tokens and the
	// webhook secret (printed above them in the same report).
	r.Env = append(r.Env, "BOWLINE_API_URL="+s.apiURL, api.TokensEnv+"="+tokensEnv(s.cfg.Settings.Tokens),
		api.WebhookSecretEnv+"="+s.cfg.Settings.WebhookSecret)
	return r
}

// WriteJSON writes r as one line of JSON.
func (r Report) WriteJSON(w io.Writer) error {
	return json.NewEncoder(w).Encode(r)
}

// WriteText writes the short report for a person: the console first,
// then what runs, in a few lines (WriteDetails has the rest).
func (r Report) WriteText(w io.Writer) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("bowline dev: open the console (logs you in):\n\n    %s\n\n", r.Console.LoginURL)
	tenants := map[string]bool{}
	for _, b := range r.Bowls {
		tenants[b.Tenant] = true
	}
	clock := "real time"
	if r.Sim.Speed != 1 {
		clock = fmt.Sprintf("a demo clock at %gx", r.Sim.Speed)
	}
	p("  %d simulated bowls of %d tenants, from %s UTC on %s; API %s; stack %q.\n",
		len(r.Bowls), len(r.Tenants), r.Sim.Start.UTC().Format("15:04"), clock, r.API.URL, r.Stack)
	p("  --verbose prints endpoints, tokens and exports; --real-time runs the bowls on the wall clock.\n")
	p("  One status line follows every few seconds. Ctrl-C stops everything.\n\n")
}

// WriteDetails writes the whole report for a person (--verbose).
func (r Report) WriteDetails(w io.Writer) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("bowline dev: stack %q is up\n\n", r.Stack)
	p("Console   %s\n  one-click login  %s\n\n", r.Console.URL, r.Console.LoginURL)
	p("  DynamoDB + Streams  %s\n  SQS                 %s\n  Kinesis             %s\n  MQTT broker         %s\n",
		r.Endpoints.DynamoDB, r.Endpoints.SQS, r.Endpoints.Kinesis, r.Endpoints.MQTT)
	if len(r.EmulatorPids) > 0 {
		p("  emulator pids       %v\n", r.EmulatorPids)
	}
	p("\n")
	for _, res := range r.Resources {
		loc := res.ARN
		if res.URL != "" {
			loc = res.URL
		}
		p("  %-15s %-34s %s\n", res.Kind, res.Name, loc)
	}
	p("\nAPI       %s   (metrics %s)\n", r.API.URL, r.API.MetricsURL)
	tokens := make([]string, 0, len(r.API.Tokens))
	for tok := range r.API.Tokens {
		tokens = append(tokens, tok)
	}
	slices.SortFunc(tokens, func(a, b string) int { return cmpStr(r.API.Tokens[a], r.API.Tokens[b]) })
	for _, tok := range tokens {
		p("  token for %-12s %s\n", r.API.Tokens[tok], tok)
	}
	p("  webhook secret       %s\n  ops token            %s\n", r.API.WebhookSecret, r.API.OpsToken)
	p("\nFake providers (GET <url>/_fake/calls)\n  shopify   %s\n  shipping  %s\n  notify    %s\n",
		r.Fakes["shopify"], r.Fakes["shipping"], r.Fakes["notify"])
	p("\nBowls (simulated from %s at %gx, %d Hz; data in %s)\n", r.Sim.Start.Format(time.RFC3339), r.Sim.Speed, r.Sim.RateHz, r.DataDir)
	for _, b := range r.Bowls {
		p("  %-9s tenant %-12s socket %s  agent %s/status\n", b.Thing, b.Tenant, b.Socket, b.StatusURL)
	}
	p("\nTo use this stack from another shell:\n")
	for _, kv := range r.Env {
		p("  export %s\n", kv)
	}
	p("\nCtrl-C stops everything.\n\n")
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// tokensEnv formats tokens as BOWLINE_API_TOKENS reads them
// (api.ParseTokens): "token=tenant,...", sorted.
func tokensEnv(tokens map[string]string) string {
	pairs := make([]string, 0, len(tokens))
	for tok, tenant := range tokens {
		pairs = append(pairs, tok+"="+tenant)
	}
	slices.Sort(pairs)
	return strings.Join(pairs, ",")
}
