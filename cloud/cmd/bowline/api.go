package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"

	"github.com/bowline-iot/bowline/cloud/app"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/internal/cli"
)

func runAPI(ctx context.Context, args []string) error {
	fs := cli.NewFlags("bowline api", "HTTP API: orders, payment webhooks, reconcile, /healthz, /metrics",
		"bowline api [--addr host:port]\n\n"+
			"Environment: "+api.TokensEnv+"=\"tokenA=tenant1,tokenB=tenant2\" (bearer tokens for /v1/orders),\n"+
			api.OpsTokenEnv+" (bearer token for /v1/ops/reconcile), "+api.WebhookSecretEnv+" (required: the\n"+
			"payment webhook's HMAC secret), "+api.AddrEnv+", BOWLINE_STACK and the standard AWS SDK variables.")
	addr := fs.String("addr", cli.EnvDefault(api.AddrEnv, api.DefaultAddr), "address to listen on (env "+api.AddrEnv+")")
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
	if settings.WebhookSecret == "" {
		return fmt.Errorf("%w: %s is not set: the payment webhook cannot verify signatures without it", cli.ErrUsage, api.WebhookSecretEnv)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	stack, err := openApp(ctx, log, app.NewRegistry())
	if err != nil {
		return err
	}
	defer stack.Close()
	a, err := stack.API(settings, nil)
	if err != nil {
		return fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	return a.Serve(ctx, *addr, func(addr net.Addr) {
		fmt.Fprintf(os.Stdout, "bowline api listening on http://%s (stack %s)\n", addr, stack.Names.Stack)
	})
}
