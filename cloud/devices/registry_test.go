package devices_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bowline-iot/bowline/cloud/devices"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
)

func TestMain(m *testing.M) { lstest.Main(m, localstack.DynamoDB) }

func newRegistry(t *testing.T) *devices.Registry {
	t.Helper()
	cfg := lstest.AWSConfig(t)
	r, err := devices.New(dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions), lstest.Names(t).AppTable(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRegisterAndLookup(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	d, err := r.Register(ctx, "bowl-1", "t1")
	if err != nil || !d.Created {
		t.Fatalf("Register(bowl-1, t1) = %+v, %v; want created", d, err)
	}
	d, err = r.Register(ctx, "bowl-1", "t1")
	if err != nil || d.Created || d.Tenant != "t1" {
		t.Fatalf("Register again = %+v, %v; want existing row of t1", d, err)
	}
	if _, err := r.Register(ctx, "bowl-1", "t2"); !errors.Is(err, devices.ErrOtherTenant) {
		t.Fatalf("Register(bowl-1, t2) error = %v; want ErrOtherTenant", err)
	}
	got, err := r.Lookup(ctx, "bowl-1")
	if err != nil || got.Tenant != "t1" {
		t.Fatalf("Lookup(bowl-1) = %+v, %v; want tenant t1", got, err)
	}
	if _, err := r.Lookup(ctx, "bowl-404"); !errors.Is(err, devices.ErrUnknownDevice) {
		t.Fatalf("Lookup(bowl-404) error = %v; want ErrUnknownDevice", err)
	}
}

func TestRegisterRejectsBadNames(t *testing.T) {
	r := newRegistry(t)
	for _, c := range []struct{ thing, tenant string }{
		{"a/b", "t1"}, {"+", "t1"}, {"#", "t1"}, {"", "t1"}, {"bowl", "t#1"}, {"bowl", ""},
	} {
		if _, err := r.Register(context.Background(), c.thing, c.tenant); err == nil {
			t.Errorf("Register(%q, %q) = nil error; want rejection", c.thing, c.tenant)
		}
	}
}
