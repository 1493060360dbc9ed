package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bowline-iot/bowline/cloud/adapters"
	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/cloud/dev"
	"github.com/bowline-iot/bowline/cloud/fakes"
	"github.com/bowline-iot/bowline/internal/cli"
)

// apiURLEnv is where `bowline order` finds the API; `bowline dev
// --verbose` prints it among the export lines.
const apiURLEnv = "BOWLINE_API_URL"

const orderSummary = "place and pay orders through a running API (bowline dev's): order create | order pay"

func runOrder(ctx context.Context, args []string) error { return orderCmd(ctx, args, os.Stdout) }

// orderCmd runs `bowline order create|pay`.
func orderCmd(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 || (args[0] != "create" && args[0] != "pay") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(stdout, "bowline order: "+orderSummary+"\n\nUsage: bowline order create --tenant T [--customer C] [--pet P] [--amount CENTS]\n       bowline order pay --order ID [--amount CENTS] [--payment-id ID]\n\n`bowline order create --help` and `bowline order pay --help` list the flags.")
			return nil
		}
		got := "nothing"
		if len(args) > 0 {
			got = strconv.Quote(args[0])
		}
		return fmt.Errorf("%w: bowline order wants create or pay; got %s", cli.ErrUsage, got)
	}
	sub, args := args[0], args[1:]
	env := "Environment (the export lines of `bowline dev --verbose`): " + apiURLEnv + " (default http://127.0.0.1:8080),\n" +
		api.TokensEnv + " (create: the tenant's bearer token), " + api.WebhookSecretEnv + " (pay: the webhook's HMAC secret)."
	var (
		fs                                  *flag.FlagSet
		tenant, customer, pet, order, payID string
	)
	if sub == "create" {
		fs = cli.NewFlags("bowline order create", "place an order of one TAG-001 through the API (POST /v1/orders)",
			"bowline order create --tenant T [--customer C] [--pet P] [--amount CENTS]\n\nPrints the order id. "+env)
		fs.StringVar(&tenant, "tenant", "", "the tenant whose token places the order (required)")
		fs.StringVar(&customer, "customer", "cust-cli", "customer id")
		fs.StringVar(&pet, "pet", "pet-cli", "pet id")
	} else {
		fs = cli.NewFlags("bowline order pay", "pay an order through the signed payment webhook (POST /v1/webhooks/payments)",
			"bowline order pay --order ID [--amount CENTS] [--payment-id ID]\n\nSigns payment.succeeded as the payment provider would and prints the\ncom.payment_completed event's id. "+env)
		fs.StringVar(&order, "order", "", "the order id `bowline order create` printed (required)")
		fs.StringVar(&payID, "payment-id", "", "the provider's payment id (default: a new one; the same id again is a duplicate)")
	}
	amount := fs.Int("amount", 4999, "price in cents: one TAG-001 in the built-in price list")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	}
	c := &dev.Client{URL: cli.EnvDefault(apiURLEnv, "http://127.0.0.1:8080")}
	if sub == "create" {
		if tenant == "" {
			return fmt.Errorf("%w: --tenant is required", cli.ErrUsage)
		}
		tokens, err := api.ParseTokens(os.Getenv(api.TokensEnv))
		if err != nil {
			return fmt.Errorf("%w: %s: %v", cli.ErrUsage, api.TokensEnv, err)
		}
		var tenants []string
		for tok, t := range tokens {
			tenants = append(tenants, t)
			if t == tenant {
				c.Token = tok
			}
		}
		if c.Token == "" {
			slices.Sort(tenants)
			return fmt.Errorf("%w: --tenant %q has no token in %s; tenants there: %s", cli.ErrUsage, tenant, api.TokensEnv, listSome(tenants, 20))
		}
		id, err := c.Order(ctx, customer, pet, *amount)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "order %s placed for tenant %s; pay it: bowline order pay --order %s\n", id, tenant, id)
		return err
	}
	if order == "" {
		return fmt.Errorf("%w: --order is required", cli.ErrUsage)
	}
	if c.Secret = os.Getenv(api.WebhookSecretEnv); c.Secret == "" {
		return fmt.Errorf("%w: %s is not set (bowline dev --verbose prints it)", cli.ErrUsage, api.WebhookSecretEnv)
	}
	if payID == "" {
		payID = fmt.Sprintf("pay_cli_%d", time.Now().UnixNano())
	}
	status, ev, err := c.Payment(ctx, order, payID, *amount)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "payment %s of order %s: %s, event %s\n", payID, order, status, ev)
	return err
}

// fakeProviders maps `bowline dev fail`'s provider names to the variables
// holding their URLs.
var fakeProviders = map[string]string{
	"shopify": adapters.ShopifyURLEnv, "shipping": adapters.ShippingURLEnv, "notify": adapters.NotifyURLEnv,
}

// devFailCmd runs `bowline dev fail <provider> <status>|ok [--times N]`.
func devFailCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := cli.NewFlags("bowline dev fail", "make one of bowline dev's fake providers fail, or heal it",
		"bowline dev fail <shopify|shipping|notify> <status|ok> [--times N]\n\n"+
			"Tells the running bowline dev's fake provider to answer <status> (100-599) to every call\n"+
			"until healed, or to its next --times calls; `ok` heals it. A 4xx other than 408/429 is\n"+
			"terminal: the delivery is dead-lettered at once; a 5xx is retried. Environment: the\n"+
			"provider's URL, BOWLINE_SHOPIFY_URL, BOWLINE_SHIPPING_URL or BOWLINE_NOTIFY_URL (the export\n"+
			"lines of `bowline dev --verbose`).")
	times := fs.Int("times", 0, "fail only the next N calls (default: every call until `ok`)")
	pos, flags := splitPositional(args)
	if err := cli.Parse(fs, flags); err != nil {
		return err
	}
	pos = append(pos, fs.Args()...)
	names := []string{"notify", "shipping", "shopify"}
	if len(pos) != 2 {
		return fmt.Errorf("%w: want <provider> <status|ok>, e.g. bowline dev fail shopify 503; providers: %s", cli.ErrUsage, strings.Join(names, ", "))
	}
	envName, ok := fakeProviders[pos[0]]
	if !ok {
		return fmt.Errorf("%w: provider %q: want one of %s", cli.ErrUsage, pos[0], strings.Join(names, ", "))
	}
	status, always := 200, false
	if pos[1] != "ok" {
		n, err := strconv.Atoi(pos[1])
		if err != nil || n < 100 || n > 599 {
			return fmt.Errorf("%w: status %q: want an HTTP status 100-599, or ok to heal", cli.ErrUsage, pos[1])
		}
		status, always = n, *times == 0
	}
	if *times < 0 {
		return fmt.Errorf("%w: --times %d: want 0 (every call) or more", cli.ErrUsage, *times)
	}
	url := os.Getenv(envName)
	if url == "" {
		return fmt.Errorf("%w: %s is not set: run the export lines `bowline dev --verbose` prints", cli.ErrUsage, envName)
	}
	n := *times
	if pos[1] == "ok" {
		n = 0
	}
	if err := fakes.FailRemote(ctx, http.DefaultClient, url, n, always, status); err != nil {
		return err
	}
	switch {
	case pos[1] == "ok":
		_, err := fmt.Fprintf(stdout, "%s fake healed\n", pos[0])
		return err
	case always:
		_, err := fmt.Fprintf(stdout, "%s fake answers %d to every call until `bowline dev fail %s ok`\n", pos[0], status, pos[0])
		return err
	}
	_, err := fmt.Fprintf(stdout, "%s fake answers %d to its next %d calls\n", pos[0], status, n)
	return err
}

// splitPositional separates the leading positional arguments from flags.
func splitPositional(args []string) (pos, flags []string) {
	for i, a := range args {
		if strings.HasPrefix(a, "-") {
			return pos, args[i:]
		}
		pos = append(pos, a)
	}
	return pos, nil
}
