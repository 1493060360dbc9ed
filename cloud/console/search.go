package console

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/engine"
)

// maxHits bounds the search page's results.
const maxHits = 50

// hit is one thing a search found.
type hit struct {
	Kind   string // order, payment, event, bowl, tenant
	Title  string
	Detail string
	Link   string
}

type searchPage struct {
	Q    string
	Hits []hit
	More bool
}

// eventLink is the page of one event.
func eventLink(e engine.Envelope) string {
	return fmt.Sprintf("%stenants/%s/events/%d", Prefix, url.PathEscape(e.Tenant), e.Seq)
}

// orderLink is the commerce page narrowed to one order: its payment and
// the payment's fan-out.
func orderLink(id string) string { return Prefix + "commerce?order=" + url.QueryEscape(id) }

// searchPage serves GET /console/search?q=: one box for an order id, an
// event id, a payment id, a bowl or a tenant. Ids match exactly; bowls
// and tenants also by part of their name. One exact hit goes straight to
// its page.
func (c *Console) searchPage(w http.ResponseWriter, r *http.Request, sess session) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	p := searchPage{Q: q}
	if q != "" {
		p.Hits = c.search(q)
		if len(p.Hits) > maxHits {
			p.Hits, p.More = p.Hits[:maxHits], true
		}
	}
	c.render(w, r, http.StatusOK, "search", page{Title: "Search", CSRF: sess.csrf, Data: p})
}

// search finds q among the tenants, the bowls and the cached events.
func (c *Console) search(q string) []hit {
	var hits []hit
	low := strings.ToLower(q)
	for _, t := range c.log.tenantNames() {
		if strings.Contains(strings.ToLower(t), low) {
			hits = append(hits, hit{Kind: "tenant", Title: t, Detail: "its chain and event log", Link: Prefix + "tenants/" + url.PathEscape(t)})
		}
	}
	things := c.things()
	names := make([]string, 0, len(things))
	for th := range things {
		if strings.Contains(strings.ToLower(th), low) {
			names = append(names, th)
		}
	}
	slices.Sort(names)
	for _, th := range names {
		hits = append(hits, hit{Kind: "bowl", Title: th, Detail: "tenant " + things[th], Link: Prefix + "bowls/" + url.PathEscape(th)})
	}
	for _, t := range c.log.tenantNames() {
		coms := map[string]comEvent{} // event id -> the commerce event that matched
		for _, e := range c.log.events(t, func(e *engine.Envelope) bool {
			if e.ID == q || e.CorrelationID == q {
				return true
			}
			// An undecodable payload is found by its event's id only.
			com, ok := commerceOf(*e)
			if !ok || com.Err != nil || (com.Order != q && com.Payment != q) {
				return false
			}
			coms[e.ID] = com
			return true
		}) {
			com, ok := coms[e.ID]
			if !ok {
				com, _ = commerceOf(e)
			}
			order, pay := com.Order, com.Payment
			switch {
			case com.Err != nil:
				// Matched by its id; its event page shows the payload.
			case e.Type == catalog.TypeOrderCreated && order == q:
				hits = append(hits, hit{Kind: "order", Title: order, Detail: fmt.Sprintf("tenant %s, %s", e.Tenant, com.Amount), Link: orderLink(order)})
			case e.Type == catalog.TypePaymentCompleted && pay == q:
				hits = append(hits, hit{Kind: "payment", Title: pay, Detail: fmt.Sprintf("pays order %s, %s", order, com.Amount), Link: eventLink(e)})
			case e.Type == catalog.TypePaymentRefused && pay == q:
				hits = append(hits, hit{Kind: "payment", Title: pay, Detail: fmt.Sprintf("refused for order %s: %s", order, com.Refusal), Link: orderLink(order)})
			}
			hits = append(hits, hit{Kind: "event", Title: fmt.Sprintf("%s #%d of %s", e.Type, e.Seq, e.Tenant), Detail: e.ID, Link: eventLink(e)})
		}
	}
	return hits
}
