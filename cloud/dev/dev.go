// Package dev runs the whole Bowline system on one machine: the local AWS
// emulators and MQTT broker (internal/localstack), provisioning, and the
// Bowline services wired to them. `bowline dev` is its command.
//
// Today it starts the stack, provisions it and reports where everything
// listens; the services join as they are built (see README).
package dev

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/provision"
	"github.com/bowline-iot/bowline/internal/resources"
)

// Config configures a development run.
type Config struct {
	// Names selects the resource prefix; zero means resources.FromEnv.
	Names resources.Names
	// Out receives the human-readable report; nil means io.Discard.
	Out io.Writer
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
}

// Validate fills defaults.
func (c *Config) Validate() error {
	if c.Names.Stack == "" {
		n, err := resources.FromEnv()
		if err != nil {
			return err
		}
		c.Names = n
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Run starts everything, reports it, and blocks until ctx ends; then it
// stops everything and returns.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	stack, err := localstack.Start(ctx, localstack.Config{Logger: cfg.Logger})
	if err != nil {
		return err
	}
	defer stack.Close()
	if err := stack.Setenv(); err != nil {
		return err
	}
	awsCfg, err := awsenv.Load(ctx)
	if err != nil {
		return err
	}
	rep, err := provision.Provision(ctx, awsCfg, cfg.Names, provision.Options{})
	if err != nil {
		return err
	}
	fmt.Fprintf(cfg.Out, "bowline dev: stack %q is up\n\n", cfg.Names.Stack)
	fmt.Fprintf(cfg.Out, "  DynamoDB + Streams  %s\n", stack.DynamoDBEndpoint)
	fmt.Fprintf(cfg.Out, "  SQS                 %s\n", stack.SQSEndpoint)
	fmt.Fprintf(cfg.Out, "  Kinesis             %s\n", stack.KinesisEndpoint)
	fmt.Fprintf(cfg.Out, "  MQTT broker         %s\n\n", stack.MQTTAddr)
	for _, r := range rep.Resources {
		loc := r.ARN
		if r.URL != "" {
			loc = r.URL
		}
		fmt.Fprintf(cfg.Out, "  %-15s %-34s %s\n", r.Kind, r.Name, loc)
	}
	fmt.Fprintf(cfg.Out, "\nTo use this stack from another shell:\n")
	for _, kv := range stack.Env() {
		fmt.Fprintf(cfg.Out, "  export %s\n", kv)
	}
	fmt.Fprintf(cfg.Out, "  export %s=%s\n\nCtrl-C stops everything.\n", resources.StackEnv, cfg.Names.Stack)
	<-ctx.Done()
	fmt.Fprintln(cfg.Out, "bowline dev: stopping")
	return nil
}
