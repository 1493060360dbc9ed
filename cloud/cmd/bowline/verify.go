package main

import (
	"context"
	"os"

	"github.com/bowline-iot/bowline/engine/command"
)

func runVerifyChain(ctx context.Context, args []string) error {
	return command.VerifyChain(ctx, args, os.Stdout)
}
