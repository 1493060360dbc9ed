package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/internal/cli"
)

// openApp opens the stack named by BOWLINE_STACK with the AWS SDK's own
// configuration (cloud/app is the one composition root), for the part the
// running command is (its AWS calls are recorded under its name when
// BOWLINE_RECORD_CALLS is set). A bad BOWLINE_STACK is a usage error (exit
// status 2). reg may be nil when the command serves no metrics.
func openApp(ctx context.Context, log *slog.Logger, reg *prometheus.Registry) (*app.App, error) {
	return openPart(ctx, cli.CommandName(ctx), log, reg)
}

// openPart is openApp for a named part, when the command's AWS calls are
// another part's (`bowline completeness anchor` runs as the daily job).
func openPart(ctx context.Context, part string, log *slog.Logger, reg *prometheus.Registry) (*app.App, error) {
	if log == nil {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	a, err := app.FromEnv(ctx, part, log, reg)
	var ce *app.ConfigError
	if errors.As(err, &ce) {
		return nil, fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	return a, err
}
