package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/bowline-iot/bowline/cloud/dev"
	"github.com/bowline-iot/bowline/internal/cli"
)

func runDev(ctx context.Context, args []string) error {
	fs := cli.NewFlags("bowline dev",
		"run the whole system locally: emulators, MQTT broker, provisioning and the Bowline services",
		"bowline dev [flags]\n\nNeeds ./scripts/setup to have run (./scripts/run does it). Ctrl-C stops everything.")
	verbose := fs.Bool("v", false, "log at debug level")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	return dev.Run(ctx, dev.Config{Out: os.Stdout, Logger: log})
}
