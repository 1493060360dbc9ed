package main

import (
	"context"

	"github.com/bowline-iot/bowline/internal/cli"
)

func runDev(ctx context.Context, args []string) error { return cli.Stub(ctx, args) }
