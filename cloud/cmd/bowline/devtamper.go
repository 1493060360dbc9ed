package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	neturl "net/url"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/attr"
	"github.com/bowline-iot/bowline/internal/cli"
)

// devTamperCmd runs `bowline dev tamper --tenant T --seq N`: it rewrites
// one stored event's payload behind the engine's back, on a local stack
// only, so `bowline verify-chain` and the console can be watched finding
// it (the README's tour).
func devTamperCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := cli.NewFlags("bowline dev tamper", "rewrite one stored event of a local stack, to watch verify-chain find it",
		"bowline dev tamper --tenant T --seq N\n\n"+
			"Sets payload.tampered on the tenant's event at seq N directly in DynamoDB, as an attacker\n"+
			"with write access to the table would, without resealing the chain. `bowline verify-chain\n"+
			"--tenant T` then reports hash_mismatch at N, and the console's Tenants page turns red.\n"+
			"Refused unless the DynamoDB endpoint is on loopback (the export lines of\n"+
			"`bowline dev --verbose`): it is a demonstration, never for a real stack.")
	tenant := fs.String("tenant", "", "tenant whose event to rewrite (required)")
	seq := fs.Uint64("seq", 0, "sequence number of the event (required, 1 or more)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	case !engine.ValidTenant(*tenant):
		return fmt.Errorf("%w: --tenant %q: want a tenant id", cli.ErrUsage, *tenant)
	case *seq == 0:
		return fmt.Errorf("%w: --seq is required (1 or more)", cli.ErrUsage)
	}
	endpoint := os.Getenv("AWS_ENDPOINT_URL_DYNAMODB")
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT_URL")
	}
	if !loopbackURL(endpoint) {
		return fmt.Errorf("%w: the DynamoDB endpoint %q is not on loopback; dev tamper only rewrites a local stack's events", cli.ErrUsage, endpoint)
	}
	stack, err := openApp(ctx, nil, nil)
	if err != nil {
		return err
	}
	defer stack.Close()
	_, err = stack.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(stack.Names.EventsTable()),
		Key:                       attr.Key(engine.EventPK(*tenant), engine.SeqSK(*seq)),
		UpdateExpression:          aws.String("SET payload.tampered = :v"),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberBOOL{Value: true}},
	})
	var cond *types.ConditionalCheckFailedException
	if errors.As(err, &cond) {
		return fmt.Errorf("%w: tenant %q has no event at seq %d in stack %q", cli.ErrUsage, *tenant, *seq, stack.Names.Stack)
	}
	if err != nil {
		return fmt.Errorf("tamper with event %d of tenant %q: %w", *seq, *tenant, err)
	}
	_, err = fmt.Fprintf(stdout, "event %d of tenant %s rewritten (payload.tampered = true); now: bowline verify-chain --tenant %s\n", *seq, *tenant, *tenant)
	return err
}

// loopbackURL reports whether u is an http(s) URL on localhost or a
// loopback address.
func loopbackURL(u string) bool {
	p, err := neturl.Parse(u)
	if err != nil || p.Host == "" {
		return false
	}
	h := p.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
