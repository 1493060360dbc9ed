package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/bowline-iot/bowline/edge/status"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/internal/cli"
)

// maxStatusBytes bounds the /status document read.
const maxStatusBytes = 4 << 20

const statusSummary = "print a running agent's status in human units (or --json)"

func runStatus(ctx context.Context, args []string) error { return statusCmd(ctx, args, os.Stdout) }

// statusCmd runs `bowline-edge status [--addr A | --config FILE] [--json]`:
// it reads the local agent's /status and prints it.
func statusCmd(ctx context.Context, args []string, stdout io.Writer) error {
	file, err := loadFile(args)
	if err != nil {
		return err
	}
	fs := cli.NewFlags("bowline-edge status", statusSummary,
		"bowline-edge status [--addr HOST:PORT | --config FILE] [--json]\n\n"+
			"Reads the status endpoint of the agent running on this gateway (GET /status) and prints\n"+
			"its connection, outbox lanes, the cloud's telemetry acknowledgements, disk budget and\n"+
			"bowls in human units. --json prints the document as the endpoint serves it. The\n"+
			"address is --addr, else the config file's status_addr, else 127.0.0.1:9110.\n"+
			"Exit status 1 when the endpoint does not answer.")
	fs.String("config", "", "the agent's JSON config file: its status_addr is read")
	addr := fs.String("addr", "", "status endpoint host:port (default: the config's status_addr, else "+status.DefaultAddr+")")
	asJSON := fs.Bool("json", false, "print the /status document as JSON")
	timeout := fs.Duration("timeout", 5*time.Second, "give up on the endpoint after this long")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	}
	if *timeout <= 0 {
		return fmt.Errorf("%w: --timeout %s: want a positive duration", cli.ErrUsage, *timeout)
	}
	target := *addr
	if target == "" {
		target = file.StatusAddr
	}
	switch target {
	case "":
		target = status.DefaultAddr
	case "off":
		return fmt.Errorf("%w: the config's status_addr is \"off\": the agent serves no status; give --addr", cli.ErrUsage)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	rep, raw, err := wire.FetchStatus(ctx, http.DefaultClient, "http://"+target, maxStatusBytes)
	if errors.Is(err, wire.ErrStatusUnreachable) {
		return fmt.Errorf("%w (is `bowline-edge run` running with this --status-addr?)", err)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		_, err = stdout.Write(raw)
		return err
	}
	return status.WriteText(stdout, rep, time.Now())
}
