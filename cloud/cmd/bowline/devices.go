package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/bowline-iot/bowline/internal/cli"
)

func runDevices(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Println("bowline devices: manage the device registry\n\nUsage: bowline devices register --thing T --tenant X [--json]\n\nRun 'bowline devices register --help' for its flags.")
		if len(args) == 0 {
			return fmt.Errorf("%w: want a subcommand: register", cli.ErrUsage)
		}
		return nil
	}
	switch args[0] {
	case "register":
		return devicesRegister(ctx, args[1:])
	default:
		return fmt.Errorf("%w: unknown devices subcommand %q (want register)", cli.ErrUsage, args[0])
	}
}

func devicesRegister(ctx context.Context, args []string) error {
	fs := cli.NewFlags("bowline devices register", "record that a thing (a bowl's gateway) belongs to a tenant",
		"bowline devices register --thing T --tenant X [--json]\n\nIdempotent for the same tenant; fails for a thing registered to another tenant.\nEnvironment: BOWLINE_STACK and the standard AWS SDK variables.")
	thing := fs.String("thing", "", "thing name, as in the MQTT topics (required)")
	tenant := fs.String("tenant", "", "tenant the thing belongs to (required)")
	asJSON := fs.Bool("json", false, "print the registry row as JSON")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if *thing == "" || *tenant == "" {
		return fmt.Errorf("%w: --thing and --tenant are required", cli.ErrUsage)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	}
	stack, err := openApp(ctx, nil, nil)
	if err != nil {
		return err
	}
	defer stack.Close()
	reg, err := stack.Devices()
	if err != nil {
		return err
	}
	d, err := reg.Register(ctx, *thing, *tenant)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(os.Stdout).Encode(d)
	}
	state := "already registered"
	if d.Created {
		state = "registered"
	}
	fmt.Printf("%s: thing %s, tenant %s\n", state, d.Thing, d.Tenant)
	return nil
}
