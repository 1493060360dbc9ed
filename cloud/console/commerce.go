package console

import (
	"net/http"
	"slices"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/inbox"
)

// maxOrders is how many orders the commerce page shows, newest first.
const maxOrders = 50

// fanout is one subscription's work on a paid order.
type fanout struct {
	workState
	Provider string
	OKCalls  int
	Calls    int
}

// orderRow is one order and its fan-out.
type orderRow struct {
	Tenant, ID, Customer, Pet string
	Amount                    string
	// Undecodable is why the order's payload did not decode (catalog.Decode):
	// the row is listed without its fields, and no payment is matched to it.
	Undecodable string
	Created     engine.Envelope
	Paid        *engine.Envelope
	// Refused are the payments refused for this order (com.payment_refused),
	// oldest first.
	Refused []refusal
	Fanout  []fanout
}

// refusal is one refused payment, said in its currency's units.
type refusal struct {
	Event   engine.Envelope
	Payment string
	// Detail is "amount 40.00 USD, expected 49.99 USD" (or "currency ..."
	// for a payment in another currency); the page puts "refused:" before it.
	Detail string
}

type commercePage struct {
	Order      string // the one order asked for ("": all)
	Orders     []orderRow
	Subs       []string
	Total      int
	Done, Dead int
	Retrying   int
	CallsKnown bool
}

func (c *Console) commercePage(w http.ResponseWriter, r *http.Request, sess session) {
	isCom := func(e *engine.Envelope) bool {
		return e.Type == catalog.TypeOrderCreated || e.Type == catalog.TypePaymentCompleted || e.Type == catalog.TypePaymentRefused
	}
	// ?order= narrows the page to one order (search and dead letters
	// link here).
	only := r.URL.Query().Get("order")
	var rows []orderRow
	paid := map[string]engine.Envelope{}
	refused := map[string][]refusal{}
	for _, t := range c.log.tenantNames() {
		for _, e := range c.log.events(t, isCom) {
			com, _ := commerceOf(e)
			id := com.Order
			switch e.Type {
			case catalog.TypePaymentCompleted:
				if com.Err == nil {
					paid[id] = e
				}
				continue
			case catalog.TypePaymentRefused:
				if com.Err == nil {
					refused[id] = append(refused[id], refusal{Event: e, Payment: com.Payment, Detail: com.Refusal})
				}
				continue
			}
			row := orderRow{Tenant: t, ID: id, Customer: com.Customer, Pet: com.Pet, Amount: com.Amount, Created: e}
			if com.Err != nil {
				row.Undecodable = com.Err.Error()
			}
			if only != "" && id != only {
				continue
			}
			rows = append(rows, row)
		}
	}
	slices.SortFunc(rows, func(a, b orderRow) int { return b.Created.OccurredAt.Compare(a.Created.OccurredAt) })
	p := commercePage{Order: only, Total: len(rows), Subs: c.durableSubs(catalog.TypePaymentCompleted), CallsKnown: c.cfg.Calls != nil}
	if len(rows) > maxOrders {
		rows = rows[:maxOrders]
	}
	var pairs [][2]string
	for i := range rows {
		if rows[i].Undecodable != "" {
			continue
		}
		rows[i].Refused = refused[rows[i].ID]
		if e, ok := paid[rows[i].ID]; ok {
			rows[i].Paid = &e
			for _, s := range p.Subs {
				pairs = append(pairs, [2]string{e.ID, s})
			}
		}
	}
	ctx := r.Context()
	states, err := c.workStates(ctx, pairs)
	if err != nil {
		c.failed(w, r, sess, err)
		return
	}
	var calls []ProviderCall
	if c.cfg.Calls != nil {
		if calls, err = c.cfg.Calls.ProviderCalls(ctx); err != nil {
			c.failed(w, r, sess, err)
			return
		}
	}
	byKey := map[string][2]int{}
	for _, cl := range calls {
		n := byKey[cl.IdempotencyKey]
		n[0]++
		if cl.OK() {
			n[1]++
		}
		byKey[cl.IdempotencyKey] = n
	}
	for i := range rows {
		if rows[i].Paid == nil {
			continue
		}
		for _, s := range p.Subs {
			st := states[inbox.Key(rows[i].Paid.ID, s)]
			n := byKey[rows[i].Paid.ID+":"+s]
			prov := providerSubs[s]
			if prov == "" {
				prov = "app"
			}
			rows[i].Fanout = append(rows[i].Fanout, fanout{workState: st, Provider: prov, Calls: n[0], OKCalls: n[1]})
			switch st.Word() {
			case "done":
				p.Done++
			case "dead":
				p.Dead++
			case "retrying":
				p.Retrying++
			}
		}
	}
	p.Orders = rows
	live := Prefix + "commerce"
	if only != "" {
		live = orderLink(only)
	}
	c.render(w, r, http.StatusOK, "commerce", page{Title: "Commerce", Nav: "commerce", CSRF: sess.csrf, LiveURL: live, Data: p})
}

func (c *Console) pipelinePage(w http.ResponseWriter, r *http.Request, sess session) {
	c.render(w, r, http.StatusOK, "pipeline", page{Title: "Pipeline", Nav: "pipeline", CSRF: sess.csrf, LiveURL: Prefix, Data: c.stages()})
}
