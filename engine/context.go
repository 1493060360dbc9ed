package engine

import "context"

type ctxKey int

const (
	tenantKey ctxKey = iota
	correlationKey
	actorKey
)

// WithTenant returns a context carrying the tenant that Emit writes for.
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantKey, tenant)
}

// Tenant returns the tenant carried by ctx, if any.
func Tenant(ctx context.Context) (string, bool) {
	t, ok := ctx.Value(tenantKey).(string)
	return t, ok && t != ""
}

// WithCorrelationID returns a context carrying the correlation id that ties
// the events of one request or workflow together.
func WithCorrelationID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, correlationKey, id)
}

// CorrelationID returns the correlation id carried by ctx, if any.
func CorrelationID(ctx context.Context) (string, bool) {
	c, ok := ctx.Value(correlationKey).(string)
	return c, ok && c != ""
}

// WithActor returns a context carrying who caused the event (a user id, a
// device thing name, a service name).
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey, actor)
}

// Actor returns the actor carried by ctx, if any.
func Actor(ctx context.Context) (string, bool) {
	a, ok := ctx.Value(actorKey).(string)
	return a, ok && a != ""
}

// ContextFor returns ctx carrying env's tenant, correlation id and actor, so
// a handler's own emits and writes land in the event's tenant and keep its
// correlation.
func ContextFor(ctx context.Context, env Envelope) context.Context {
	ctx = WithTenant(ctx, env.Tenant)
	ctx = WithCorrelationID(ctx, env.CorrelationID)
	return WithActor(ctx, env.Actor)
}
