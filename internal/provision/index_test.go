package provision_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/provision"
	"github.com/bowline-iot/bowline/internal/resources"
)

// TestExistingEventsTableGetsTheHeadsIndex: an events table made before
// the heads index existed gets it from the next provision.
func TestExistingEventsTableGetsTheHeadsIndex(t *testing.T) {
	cfg := lstest.AWSConfig(t)
	c := dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions)
	names, err := resources.New("ix" + strings.ToLower(ulid.Make().String()[18:]))
	if err != nil {
		t.Fatal(err)
	}
	table := names.EventsTable()
	s := ddbtypes.ScalarAttributeTypeS
	if _, err := c.CreateTable(t.Context(), &dynamodb.CreateTableInput{
		TableName: &table, BillingMode: ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: s}, {AttributeName: aws.String("sk"), AttributeType: s}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}, {AttributeName: aws.String("sk"), KeyType: ddbtypes.KeyTypeRange}},
		StreamSpecification:  &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewTypeNewAndOldImages},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := provision.Provision(t.Context(), cfg, names, provision.Options{Parts: []provision.Part{provision.Tables}}); err != nil {
		t.Fatal(err)
	}
	out, err := c.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: &table})
	if err != nil {
		t.Fatal(err)
	}
	if g := out.Table.GlobalSecondaryIndexes; len(g) != 1 || aws.ToString(g[0].IndexName) != "heads" || g[0].IndexStatus != ddbtypes.IndexStatusActive {
		t.Errorf("indexes of %s after provisioning = %+v; want heads, active", table, g)
	}
}
