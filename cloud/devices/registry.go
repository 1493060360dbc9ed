package devices

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/attr"
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

// ValidThing reports whether thing can name a device: a wire.ValidName (1-128
// letters, digits, '_', '.', ':' or '-', starting with a letter or digit),
// the rule ingest holds topics to, so a registered thing is one MQTT topic
// segment without wildcards that ingest accepts.
func ValidThing(thing string) bool { return wire.ValidName(thing) }

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
			attr.PK:          attr.S(PK(thing)),
			attr.SK:          attr.S(SK),
			attrEntity:       attr.S(Entity),
			attrThing:        attr.S(thing),
			attrTenant:       attr.S(tenant),
			attrRegisteredAt: attr.S(at.Format(time.RFC3339Nano)),
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
		TableName:      aws.String(r.table),
		Key:            key(thing),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Device{}, fmt.Errorf("look up thing %q in %s: %w", thing, r.table, err)
	}
	if out.Item == nil {
		return Device{}, fmt.Errorf("thing %q: %w", thing, ErrUnknownDevice)
	}
	d := Device{Thing: thing, Tenant: attr.GetS(out.Item, attrTenant)}
	d.RegisteredAt, _ = time.Parse(time.RFC3339Nano, attr.GetS(out.Item, attrRegisteredAt))
	if d.Tenant == "" {
		return Device{}, fmt.Errorf("thing %q: registry row has no tenant: %w", thing, ErrUnknownDevice)
	}
	return d, nil
}
