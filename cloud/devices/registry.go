package devices

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine"
)

// Errors of the registry.
var (
	// ErrUnknownDevice: no registry row for the thing.
	ErrUnknownDevice = errors.New("unknown device")
	// ErrOtherTenant: the thing is already registered to another tenant.
	ErrOtherTenant = errors.New("device registered to another tenant")
	// ErrInvalidThing: the thing name cannot be an MQTT topic segment.
	ErrInvalidThing = errors.New("invalid thing name")
)

// Row layout.
const (
	// SK is the sort key of every registry row.
	SK = "DEVICE"
	// Entity is the value of the entity attribute of registry rows.
	Entity = "device"
)

// PK is the app-table partition key of thing's registry row.
func PK(thing string) string { return "DEVICE#" + thing }

// DynamoAPI is the part of the DynamoDB client the registry uses; it must be
// safe for concurrent use.
type DynamoAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

// Device is one registry row.
type Device struct {
	Thing        string    `json:"thing"`
	Tenant       string    `json:"tenant"`
	RegisteredAt time.Time `json:"registered_at"`
	// Created is false when the row already existed (Register only).
	Created bool `json:"created"`
}

// Registry reads and writes registry rows in the app table. It is safe for
// concurrent use.
type Registry struct {
	client DynamoAPI
	table  string
	now    func() time.Time
}

// New returns a Registry on table (resources.Names.AppTable). now defaults
// to time.Now.
func New(client DynamoAPI, table string, now func() time.Time) (*Registry, error) {
	if client == nil || table == "" {
		return nil, errors.New("devices: client and table are required")
	}
	if now == nil {
		now = time.Now
	}
	return &Registry{client: client, table: table, now: now}, nil
}

var thingPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)

// ValidThing reports whether thing can name a device: 1-128 letters, digits,
// '_', '.', ':' or '-' (an AWS IoT thing name, and the edge's rule for a
// topic segment), so it is one MQTT topic segment without wildcards.
func ValidThing(thing string) bool { return thingPattern.MatchString(thing) }

// Register records that thing belongs to tenant. It is idempotent for the
// same tenant and fails with ErrOtherTenant for another.
func (r *Registry) Register(ctx context.Context, thing, tenant string) (Device, error) {
	if !ValidThing(thing) {
		return Device{}, fmt.Errorf("register thing %q: %w", thing, ErrInvalidThing)
	}
	if !engine.ValidTenant(tenant) {
		return Device{}, fmt.Errorf("register thing %q to tenant %q: %w", thing, tenant, engine.ErrInvalidTenant)
	}
	at := r.now().UTC()
	_, err := r.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(r.table),
		Item: map[string]types.AttributeValue{
			"pk":            &types.AttributeValueMemberS{Value: PK(thing)},
			"sk":            &types.AttributeValueMemberS{Value: SK},
			"entity":        &types.AttributeValueMemberS{Value: Entity},
			"thing":         &types.AttributeValueMemberS{Value: thing},
			"tenant":        &types.AttributeValueMemberS{Value: tenant},
			"registered_at": &types.AttributeValueMemberS{Value: at.Format(time.RFC3339Nano)},
		},
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		d, err := r.Lookup(ctx, thing)
		if err != nil {
			return Device{}, err
		}
		if d.Tenant != tenant {
			return d, fmt.Errorf("register thing %q to tenant %q: %w (%q)", thing, tenant, ErrOtherTenant, d.Tenant)
		}
		return d, nil
	}
	if err != nil {
		return Device{}, fmt.Errorf("register thing %q in %s: %w", thing, r.table, err)
	}
	return Device{Thing: thing, Tenant: tenant, RegisteredAt: at, Created: true}, nil
}

// Lookup returns thing's registry row, or an error wrapping ErrUnknownDevice.
// The read is strongly consistent, so a device registered a moment ago is
// found.
func (r *Registry) Lookup(ctx context.Context, thing string) (Device, error) {
	out, err := r.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(r.table),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: PK(thing)},
			"sk": &types.AttributeValueMemberS{Value: SK},
		},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Device{}, fmt.Errorf("look up thing %q in %s: %w", thing, r.table, err)
	}
	if out.Item == nil {
		return Device{}, fmt.Errorf("thing %q: %w", thing, ErrUnknownDevice)
	}
	d := Device{Thing: thing}
	if v, ok := out.Item["tenant"].(*types.AttributeValueMemberS); ok {
		d.Tenant = v.Value
	}
	if v, ok := out.Item["registered_at"].(*types.AttributeValueMemberS); ok {
		d.RegisteredAt, _ = time.Parse(time.RFC3339Nano, v.Value)
	}
	if d.Tenant == "" {
		return Device{}, fmt.Errorf("thing %q: registry row has no tenant: %w", thing, ErrUnknownDevice)
	}
	return d, nil
}
