package main

import (
	"context"
	"os"

	"github.com/bowline-iot/bowline/engine/command"
)

func runCatalog(ctx context.Context, args []string) error {
	return command.Catalog(ctx, args, os.Stdout)
}
