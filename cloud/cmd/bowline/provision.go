package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/cli"
	"github.com/bowline-iot/bowline/internal/provision"
	"github.com/bowline-iot/bowline/internal/resources"
)

func runProvision(ctx context.Context, args []string) error {
	fs := cli.NewFlags("bowline provision",
		"create every DynamoDB table, stream, SQS queue and Kinesis stream of the stack, idempotently",
		"bowline provision [--json]\n\nEndpoints, region and credentials come from the standard AWS SDK variables\n(AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_KINESIS, AWS_REGION, ...);\nthe name prefix from BOWLINE_STACK (default dev).")
	asJSON := fs.Bool("json", false, "print what exists as JSON")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	}
	names, err := resources.FromEnv()
	if err != nil {
		return fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	cfg, err := awsenv.Load(ctx)
	if err != nil {
		return err
	}
	rep, err := provision.Provision(ctx, cfg, names, provision.Options{})
	if err != nil {
		return err
	}
	return printReport(rep, *asJSON)
}

func printReport(rep provision.Report, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "KIND\tNAME\tSTATE")
	for _, r := range rep.Resources {
		state := "exists"
		if r.Created {
			state = "created"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", r.Kind, r.Name, state)
	}
	return w.Flush()
}
