// Package awsenv loads the AWS SDK configuration the way every Bowline
// process does: the SDK's own default chain (credentials, region, and the
// standard AWS_ENDPOINT_URL_* variables that select local emulators), plus
// two Bowline defaults. Nothing AWS-specific is hand-rolled here.
package awsenv

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// DefaultRegion is used only when no region is configured and an endpoint
// override is set (a local emulator does not care which region it is).
const DefaultRegion = "us-east-1"

// Local reports whether any AWS_ENDPOINT_URL* variable points the SDK away
// from real AWS.
func Local() bool {
	for _, v := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_DYNAMODB_STREAMS", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_KINESIS"} {
		if os.Getenv(v) != "" {
			return true
		}
	}
	return false
}

// Load returns the SDK configuration. Endpoints come only from the standard
// variables; when they name an emulator and no region is set, DefaultRegion
// is used. Response checksums are validated only when an operation requires
// them: DynamoDB Local's error responses otherwise trip a spurious warning.
func Load(ctx context.Context, opts ...func(*config.LoadOptions) error) (aws.Config, error) {
	base := []func(*config.LoadOptions) error{
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
	}
	if Local() && os.Getenv("AWS_REGION") == "" && os.Getenv("AWS_DEFAULT_REGION") == "" {
		base = append(base, config.WithRegion(DefaultRegion))
	}
	cfg, err := config.LoadDefaultConfig(ctx, append(base, opts...)...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load aws config: %w", err)
	}
	if cfg.Region == "" {
		return aws.Config{}, fmt.Errorf("load aws config: no region: set AWS_REGION (or AWS_ENDPOINT_URL_* for the local stack)")
	}
	return cfg, nil
}

// DynamoDBOptions is the option every Bowline DynamoDB client is built
// with: dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions). Against a
// local emulator it turns off the X-Amz-Crc32 response check, which
// DynamoDB Local's error responses fail (the SDK then logs a spurious
// "response did not match expected checksum" warning); against AWS it
// changes nothing.
func DynamoDBOptions(o *dynamodb.Options) {
	if Local() {
		o.DisableValidateResponseChecksum = true
	}
}
