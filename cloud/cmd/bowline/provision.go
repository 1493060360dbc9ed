package main

import (
	"context"

	"github.com/bowline-iot/bowline/internal/cli"
)

func runProvision(ctx context.Context, args []string) error { return cli.Stub(ctx, args) }
