package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/bowline-iot/bowline/cloud/app"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/cloud/guard"
	"github.com/bowline-iot/bowline/internal/cli"
)

// DefaultAPIMetricsAddr is where `bowline api` serves /metrics: loopback,
// a listener of its own, not the API's (docs/security.md).
const DefaultAPIMetricsAddr = "127.0.0.1:9090"

func runAPI(ctx context.Context, args []string) error {
	fs := cli.NewFlags("bowline api", "HTTP API: orders, payment webhooks, reconcile, the web console, /healthz; /metrics on its own listener",
		"bowline api [--addr host:port] [--metrics-addr host:port] [--console-addr off|host:port]\n\n"+
			"Environment: "+api.TokensEnv+"=\"tokenA=tenant1,tokenB=tenant2\" (bearer tokens for /v1/orders),\n"+
			api.OpsTokenEnv+" (bearer token for /v1/ops/reconcile and the console's login;\nwithout it /console/ refuses), "+api.WebhookSecretEnv+" (required: the\n"+
			"payment webhook's HMAC secret), "+api.PricesEnv+" (price list file; default the built-in list),\n"+
			guard.ProxiesEnv+" (addresses or CIDR ranges of the load balancer: only their\n"+
			"X-Forwarded-For and X-Forwarded-Proto are believed), "+api.ConsoleAddrEnv+" (default of --console-addr),\n"+
			api.AddrEnv+", BOWLINE_STACK and the standard AWS SDK variables.\n\n"+
			"Wrong bearer tokens, ops tokens and console logins are counted per client address: after\n"+
			"10 a source gets 429 until it earns a try back (one a minute); each is logged as\n"+
			"msg=auth_failure without the token. Behind the load balancer the client address and\n"+
			"HTTPS come from "+guard.ProxiesEnv+" only (docs/security.md).")
	addr := fs.String("addr", cli.EnvDefault(api.AddrEnv, api.DefaultAddr), "address to listen on (env "+api.AddrEnv+")")
	metricsAddr := fs.String("metrics-addr", DefaultAPIMetricsAddr, "serve Prometheus /metrics on this address, never on --addr; keep it off the load balancer (off when empty)")
	consoleAddr := fs.String("console-addr", "", "where the web console is served: empty, under /console/ on --addr; \"off\", nowhere; host:port, on a listener of its own and not on --addr (env "+api.ConsoleAddrEnv+")")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	}
	if _, _, err := net.SplitHostPort(*addr); err != nil {
		return fmt.Errorf("%w: --addr %q: %v", cli.ErrUsage, *addr, err)
	}
	settings, err := api.SettingsFromEnv()
	if err != nil {
		return fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	if *consoleAddr != "" {
		settings.ConsoleAddr = *consoleAddr
		if *consoleAddr != api.ConsoleOff {
			if _, _, err := net.SplitHostPort(*consoleAddr); err != nil {
				return fmt.Errorf("%w: --console-addr %q: want host:port or %q: %v", cli.ErrUsage, *consoleAddr, api.ConsoleOff, err)
			}
		}
	}
	if settings.WebhookSecret == "" {
		return fmt.Errorf("%w: %s is not set: the payment webhook cannot verify signatures without it", cli.ErrUsage, api.WebhookSecretEnv)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	reg := app.NewRegistry()
	stack, err := openApp(ctx, log, reg)
	if err != nil {
		return err
	}
	defer stack.Close()
	// The console needs the ops token; without it /console/ refuses.
	var con http.Handler
	var run func(context.Context) error
	if settings.OpsToken != "" && settings.ConsoleAddr != api.ConsoleOff {
		// A full verification reads every event: once a minute, not every 5 s.
		c, err := stack.Console(ctx, app.ConsoleOptions{OpsToken: settings.OpsToken, VerifyEvery: time.Minute, TrustedProxies: settings.TrustedProxies})
		if err != nil {
			return err
		}
		con, run = c, c.Run
	}
	a, err := stack.APIWithConsole(settings, con, nil)
	if err != nil {
		return fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	if *metricsAddr != "" {
		if err := serveMetrics(ctx, *metricsAddr, reg, log); err != nil {
			return fmt.Errorf("%w: %v", cli.ErrUsage, err)
		}
	}
	g := app.NewGroup(ctx, log)
	if run != nil {
		g.Go("console", run)
	}
	own := settings.ConsoleAddr != "" && settings.ConsoleAddr != api.ConsoleOff
	if own && con != nil {
		g.Go("console-listener", func(ctx context.Context) error {
			return a.ServeHandler(ctx, "console", settings.ConsoleAddr, con, func(addr net.Addr) {
				fmt.Fprintf(os.Stdout, "console: http://%s/console/ on its own listener (log in with %s)\n", addr, api.OpsTokenEnv)
			})
		})
	}
	serveErr := a.Serve(g.Context(), *addr, func(addr net.Addr) {
		fmt.Fprintf(os.Stdout, "bowline api listening on http://%s (stack %s)\n", addr, stack.Names.Stack)
		switch {
		case settings.ConsoleAddr == api.ConsoleOff:
			fmt.Fprintf(os.Stdout, "console: off (--console-addr %s)\n", api.ConsoleOff)
		case con == nil:
			fmt.Fprintf(os.Stdout, "console: disabled (%s is not set)\n", api.OpsTokenEnv)
		case !own:
			fmt.Fprintf(os.Stdout, "console: http://%s/console/ (log in with %s)\n", addr, api.OpsTokenEnv)
		}
	})
	return errors.Join(serveErr, g.Close())
}
