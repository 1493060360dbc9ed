package dev

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/provision"
)

// stack is the local AWS stack and the broker, provisioned.
type stack struct {
	*localstack.Stack
	owned  bool // started here, so Close stops it
	aws    aws.Config
	report provision.Report
}

// startStack starts the emulators and the broker (or adopts cfg.Stack),
// points this process's AWS SDK at them and provisions cfg.Names.
func startStack(ctx context.Context, cfg *Config) (*stack, error) {
	s := &stack{Stack: cfg.Stack}
	if s.Stack == nil {
		ls, err := localstack.Start(ctx, localstack.Config{Root: cfg.Root, Logger: cfg.Logger.With("part", "localstack")})
		if err != nil {
			return nil, fmt.Errorf("start local stack: %w", err)
		}
		s.Stack, s.owned = ls, true
		if err := ls.Setenv(); err != nil {
			s.close()
			return nil, fmt.Errorf("local stack environment: %w", err)
		}
	}
	if s.MQTTAddr == "" || s.KinesisEndpoint == "" || s.SQSEndpoint == "" || s.DynamoDBEndpoint == "" {
		s.close()
		return nil, fmt.Errorf("local stack: dev needs DynamoDB, SQS, Kinesis and MQTT; running: dynamodb %q sqs %q kinesis %q mqtt %q",
			s.DynamoDBEndpoint, s.SQSEndpoint, s.KinesisEndpoint, s.MQTTAddr)
	}
	var err error
	if s.aws, err = awsenv.Load(ctx); err != nil {
		s.close()
		return nil, err
	}
	if s.report, err = provision.Provision(ctx, s.aws, cfg.Names, provision.Options{}); err != nil {
		s.close()
		return nil, fmt.Errorf("provision stack %q: %w", cfg.Names.Stack, err)
	}
	return s, nil
}

// close stops the stack if it was started here.
func (s *stack) close() error {
	if s.owned {
		return s.Stack.Close()
	}
	return nil
}
