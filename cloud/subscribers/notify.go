package subscribers

import (
	"context"

	"github.com/bowline-iot/bowline/cloud/catalog"

	"github.com/bowline-iot/bowline/cloud/adapters"
	"github.com/bowline-iot/bowline/engine"
)

// notifyOwner returns the handler of one of the owner subscriptions: it
// tells the tenant's owner, through the directory's contact, what the event
// says. The template is the event type; the data is its payload.
func (s *Set) notifyOwner(subscription string) engine.Handler {
	return func(ctx context.Context, env engine.Envelope) error {
		c, err := s.contacts.Owner(ctx, env.Tenant)
		if err != nil {
			return err
		}
		return classify(s.cfg.Notify.Send(ctx, adapters.Key(env.ID, subscription), adapters.Notification{
			Tenant: env.Tenant, To: c.Address, Channel: c.Channel, Template: env.Type, Data: env.Payload,
		}))
	}
}

// notifySupport tells support about a device fault.
func (s *Set) notifySupport(ctx context.Context, env engine.Envelope) error {
	data := map[string]any{"tenant": env.Tenant, "actor": env.Actor}
	for k, v := range env.Payload {
		data[k] = v
	}
	return classify(s.cfg.Notify.Send(ctx, adapters.Key(env.ID, catalog.SubNotifySupport), adapters.Notification{
		Tenant: env.Tenant, To: s.cfg.SupportAddress, Channel: "email", Template: env.Type, Data: data,
	}))
}
