package command

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/resources"
)

// dynamo returns a DynamoDB client and the stack's resource names.
func dynamo(ctx context.Context) (*dynamodb.Client, resources.Names, error) {
	names, err := resources.FromEnv()
	if err != nil {
		return nil, resources.Names{}, err
	}
	cfg, err := awsenv.Load(ctx)
	if err != nil {
		return nil, resources.Names{}, err
	}
	client := dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions)
	return client, names, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}
