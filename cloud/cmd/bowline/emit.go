package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/cli"
)

// emitSummary is the one-line description of `bowline emit`.
const emitSummary = "emit one event through the engine"

func runEmit(ctx context.Context, args []string) error { return emitCmd(ctx, args, os.Stdout) }

// emitCmd runs `bowline emit --tenant T --type X --payload JSON
// [--idempotency-key K] [--correlation-id C] [--actor A] [--json]`: it emits
// one event of a declared type and prints it. A repeated idempotency key
// prints the first event's id and succeeds without writing.
func emitCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := cli.NewFlags("bowline emit", emitSummary,
		"bowline emit --tenant T --type X [--payload JSON] [--idempotency-key K] [--json]\n\n"+
			"The event enters the tenant's permanent hash chain, so it is checked first: the type must\n"+
			"be in the catalog (`bowline catalog`), a device event's payload (bowl.*) must pass the\n"+
			"rules ingest applies to devices' messages, and any other's must have the fields of its\n"+
			"payload type (`bowline catalog --markdown`; an optional one may be left out), each of its\n"+
			"JSON type. Bad input exits 2 naming the field, or listing the valid types.")
	tenant := fs.String("tenant", "", "tenant to emit for (required)")
	typ := fs.String("type", "", "declared event type, e.g. bowl.refilled (required; see bowline catalog)")
	payload := fs.String("payload", "{}", "event payload: a JSON object")
	key := fs.String("idempotency-key", "", "emit at most once per tenant and key")
	corr := fs.String("correlation-id", "", "correlation id (default: the event id)")
	actor := fs.String("actor", "cli", "who emits the event")
	asJSON := fs.Bool("json", false, "print the event as JSON")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	case *tenant == "":
		return fmt.Errorf("%w: --tenant is required", cli.ErrUsage)
	case *typ == "":
		return fmt.Errorf("%w: --type is required", cli.ErrUsage)
	case !engine.ValidTenant(*tenant):
		return fmt.Errorf("%w: --tenant %q: want letters, digits, '_', '.', ':' or '-'", cli.ErrUsage, *tenant)
	case !json.Valid([]byte(*payload)):
		return fmt.Errorf("%w: --payload %.60q is not valid JSON", cli.ErrUsage, *payload)
	}
	if err := checkPayload(catalog.Bowline(), *typ, json.RawMessage(*payload), time.Now()); err != nil {
		return err
	}
	stack, err := openApp(ctx, nil, nil)
	if err != nil {
		return err
	}
	defer stack.Close()
	e := stack.Engine
	ctx = engine.WithActor(engine.WithTenant(ctx, *tenant), *actor)
	if *corr != "" {
		ctx = engine.WithCorrelationID(ctx, *corr)
	}
	env, err := e.EmitEvent(ctx, engine.Event{Type: *typ, Payload: json.RawMessage(*payload), IdempotencyKey: *key})
	var dup *engine.DuplicateError
	switch {
	case errors.As(err, &dup):
		if *asJSON {
			return writeJSON(stdout, map[string]any{"duplicate": true, "id": dup.EventID, "idempotency_key": dup.Key})
		}
		_, err = fmt.Fprintf(stdout, "duplicate: idempotency key %q already emitted event %s; nothing written\n", dup.Key, dup.EventID)
		return err
	case err != nil:
		return err
	}
	if *asJSON {
		return writeJSON(stdout, env)
	}
	_, err = fmt.Fprintf(stdout, "emitted %s for tenant %s: id %s seq %d hash %s\n", env.Type, env.Tenant, env.ID, env.Seq, env.Hash)
	return err
}

func quote(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
