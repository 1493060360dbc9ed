package main

import (
	"context"
	"os"

	"github.com/bowline-iot/bowline/engine/command"
)

func runEmit(ctx context.Context, args []string) error { return command.Emit(ctx, args, os.Stdout) }
