package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/cli"
	"github.com/bowline-iot/bowline/internal/resources"
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
	names, err := resources.FromEnv()
	if err != nil {
		return fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	awsCfg, err := awsenv.Load(ctx)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	b, err := api.Build(api.BuildConfig{AWS: awsCfg, Names: names, Settings: settings, Logger: log})
	if err != nil {
		return fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	defer b.Engine.Close()
	return b.API.Serve(ctx, *addr, func(a net.Addr) {
		fmt.Fprintf(os.Stdout, "bowline api listening on http://%s (stack %s)\n", a, names.Stack)
	})
}
