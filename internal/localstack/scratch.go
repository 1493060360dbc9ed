package localstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/provision"
	"github.com/bowline-iot/bowline/internal/resources"
)

// Scratch is a started stack made ready for one program: the standard
// AWS_ENDPOINT_URL_* variables and BOWLINE_STACK point at it in this
// process, and every resource its services serve is provisioned under a
// fresh random prefix. Tests (through lstest) and the benchmark programs
// use it; Close stops the stack.
type Scratch struct {
	*Stack
	Names resources.Names
	AWS   aws.Config
}

// StartScratch starts cfg's services, points this process at them and
// provisions the matching resources under prefix plus random hex.
func StartScratch(ctx context.Context, cfg Config, prefix string) (*Scratch, error) {
	st, err := Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	sc, err := ready(ctx, st, cfg.Services, prefix)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	return sc, nil
}

func ready(ctx context.Context, st *Stack, services []Service, prefix string) (*Scratch, error) {
	if services == nil {
		services = AllServices
	}
	if err := st.Setenv(); err != nil {
		return nil, err
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	names, err := resources.New(prefix + hex.EncodeToString(b[:]))
	if err != nil {
		return nil, err
	}
	if err := setenv(resources.StackEnv, names.Stack); err != nil {
		return nil, err
	}
	cfg, err := awsenv.Load(ctx)
	if err != nil {
		return nil, err
	}
	var parts []provision.Part
	for svc, part := range map[Service]provision.Part{DynamoDB: provision.Tables, SQS: provision.Queues, Kinesis: provision.Streams} {
		if slices.Contains(services, svc) {
			parts = append(parts, part)
		}
	}
	if len(parts) > 0 {
		slices.Sort(parts)
		if _, err := provision.Provision(ctx, cfg, names, provision.Options{Parts: parts}); err != nil {
			return nil, fmt.Errorf("provision %s: %w", names.Stack, err)
		}
	}
	return &Scratch{Stack: st, Names: names, AWS: cfg}, nil
}
