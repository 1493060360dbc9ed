package subscribers

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/attr"
)

// Contact says where a tenant's owner notifications go.
type Contact struct {
	Channel string `dynamodbav:"channel" json:"channel"`
	Address string `dynamodbav:"address" json:"address"`
}

// defaultContact is used for a tenant without a contact row: a push to the
// tenant's app, which needs no address.
func defaultContact(tenant string) Contact {
	return Contact{Channel: "push", Address: "tenant:" + tenant}
}

// Directory caches owner contacts. The BEST_EFFORT contact_changes
// subscription refreshes an entry when its row changes; entries also expire
// after the TTL, because best effort may drop a change.
type Directory struct {
	db    DynamoDB
	table string
	ttl   time.Duration
	now   func() time.Time

	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	c  Contact
	at time.Time
}

func newDirectory(db DynamoDB, table string, ttl time.Duration, now func() time.Time) *Directory {
	return &Directory{db: db, table: table, ttl: ttl, now: now, cache: map[string]cached{}}
}

// Owner returns where tenant's owner notifications go. A tenant without a
// contact row gets the default push contact (not cached, so a new row is
// seen at once).
func (d *Directory) Owner(ctx context.Context, tenant string) (Contact, error) {
	d.mu.Lock()
	e, ok := d.cache[tenant]
	d.mu.Unlock()
	if ok && d.now().Sub(e.at) < d.ttl {
		return e.c, nil
	}
	out, err := d.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(d.table), ConsistentRead: aws.Bool(true),
		Key: contactKey(tenant),
	})
	if err != nil {
		return Contact{}, fmt.Errorf("read contact of tenant %q: %w", tenant, err)
	}
	if out.Item == nil {
		return defaultContact(tenant), nil
	}
	var c Contact
	if err := attributevalue.UnmarshalMap(out.Item, &c); err != nil || c.Channel == "" || c.Address == "" {
		return defaultContact(tenant), nil
	}
	d.put(tenant, c)
	return c, nil
}

func (d *Directory) put(tenant string, c Contact) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cache[tenant] = cached{c: c, at: d.now()}
}

// Forget drops tenant's cached contact.
func (d *Directory) Forget(tenant string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.cache, tenant)
}

// contactChanged is the BEST_EFFORT handler of row.contact.modify: the
// envelope (engine/recordchange) carries the row's new image as
// payload["new"]; a usable one replaces the cached contact, anything else
// just drops it so the next notification reads the row.
func (s *Set) contactChanged(_ context.Context, env engine.Envelope) error {
	var p struct {
		New map[string]any `json:"new"`
	}
	_ = env.DecodePayload(&p)
	tenant, _ := p.New["tenant"].(string)
	if tenant == "" {
		tenant = env.Tenant
	}
	if tenant == "" {
		s.log.Warn("contact change without a tenant", "event", env.ID)
		return nil
	}
	ch, _ := p.New["channel"].(string)
	addr, _ := p.New["address"].(string)
	if sk, _ := p.New[attr.SK].(string); sk == ContactSK && ch != "" && addr != "" {
		s.contacts.put(tenant, Contact{Channel: ch, Address: addr})
		s.log.Info("owner contact refreshed", "tenant", tenant, "channel", ch)
		return nil
	}
	s.contacts.Forget(tenant)
	return nil
}
