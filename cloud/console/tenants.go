package console

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/inbox"
)

// pageSize is how many events a page of the log shows.
const pageSize = 50

// tenantRow is one line of the tenants page.
type tenantRow struct {
	tenantView
	OpenLetters int
}

func (c *Console) tenantsPage(w http.ResponseWriter, r *http.Request, sess session) {
	letters, err := c.cfg.DeadLetters.All(r.Context())
	if err != nil {
		c.failed(w, r, sess, err)
		return
	}
	open := map[string]int{}
	for _, l := range letters {
		if !l.Poison && l.Open() {
			open[l.Tenant]++
		}
	}
	var rows []tenantRow
	for _, v := range c.log.views() {
		rows = append(rows, tenantRow{tenantView: v, OpenLetters: open[v.Tenant]})
	}
	c.render(w, r, http.StatusOK, "tenants", page{Title: "Tenants", Nav: "tenants", CSRF: sess.csrf, LiveURL: Prefix + "tenants", Data: rows})
}

// logRow is one event of the log page with its link to the previous one.
type logRow struct {
	Env engine.Envelope
	// LinkOK: prev_hash is the hash of the event before (as cached).
	LinkOK bool
	// Broken: at or after the first bad seq of the last verification.
	Broken bool
	Bad    bool // the first bad seq itself
}

type tenantLogPage struct {
	View   tenantView
	Rows   []logRow
	Older  uint64 // ?before= of the next older page; 0 none
	Newer  bool
	Before uint64
}

func (c *Console) tenantPage(w http.ResponseWriter, r *http.Request, sess session) {
	tenant := r.PathValue("tenant")
	v, ok := c.log.view(tenant)
	if !ok {
		c.notFound(w, r, sess, fmt.Sprintf("no tenant %q with a chain", tenant))
		return
	}
	before, _ := strconv.ParseUint(r.URL.Query().Get("before"), 10, 64)
	// One more than a page: the oldest shown needs its predecessor's hash.
	envs, older := c.log.window(tenant, before, pageSize+1)
	p := tenantLogPage{View: v, Before: before, Newer: before > 0 && before < uint64(v.Events)}
	bad := v.Chain.FirstBadSeq
	for i, e := range envs {
		if i == pageSize {
			break
		}
		row := logRow{Env: e, LinkOK: true}
		switch {
		case e.Seq == 1:
			row.LinkOK = e.PrevHash == engine.Genesis
		case i+1 < len(envs):
			row.LinkOK = e.PrevHash == envs[i+1].Hash
		}
		if v.Checked() && !v.Chain.Intact && bad > 0 && e.Seq >= bad {
			row.Broken, row.Bad = true, e.Seq == bad
		}
		p.Rows = append(p.Rows, row)
	}
	if len(envs) > pageSize {
		p.Older = envs[pageSize-1].Seq - 1
	} else if older > 0 {
		p.Older = older
	}
	live := Prefix + "tenants/" + tenant
	if before > 0 {
		live += "?before=" + strconv.FormatUint(before, 10)
	}
	c.render(w, r, http.StatusOK, "tenant", page{Title: "Tenant " + tenant, Nav: "tenants", CSRF: sess.csrf, LiveURL: live, Data: p})
}

// verifyNow serves POST /console/tenants/{tenant}/verify: verify at once.
func (c *Console) verifyNow(w http.ResponseWriter, r *http.Request, _ session) {
	tenant := r.PathValue("tenant")
	c.verifyTenant(r.Context(), tenant, true)
	http.Redirect(w, r, Prefix+"tenants/"+tenant, http.StatusSeeOther)
}

// eventDetail is the event page.
type eventDetail struct {
	Tenant string
	Seq    uint64
	Env    engine.Envelope
	// Recomputed is the hash of the row as stored now; HashOK when it is
	// the stored hash.
	Recomputed string
	HashOK     bool
	HashErr    string
	Payload    string
	Work       []workState
	Letters    []deadletter.Letter
	Calls      []ProviderCall
	CallsKnown bool
	Chain      tenantView
	// Prev and Next are the neighbours' seqs (0: none).
	Prev, Next uint64
}

func (c *Console) eventPage(w http.ResponseWriter, r *http.Request, sess session) {
	tenant := r.PathValue("tenant")
	seq, err := strconv.ParseUint(r.PathValue("seq"), 10, 64)
	if err != nil || seq == 0 {
		c.notFound(w, r, sess, "no event "+r.PathValue("seq"))
		return
	}
	ctx := r.Context()
	env, found, err := c.log.readEvent(ctx, tenant, seq)
	if err != nil {
		c.failed(w, r, sess, err)
		return
	}
	if !found {
		c.notFound(w, r, sess, fmt.Sprintf("tenant %q has no event %d", tenant, seq))
		return
	}
	d := eventDetail{Tenant: tenant, Seq: seq, Env: env, Payload: prettyJSON(env.Payload)}
	d.Chain, _ = c.log.view(tenant)
	if seq > 1 {
		d.Prev = seq - 1
	}
	if seq < d.Chain.HeadSeq {
		d.Next = seq + 1
	}
	if h, err := engine.ChainHash(env.PrevHash, env); err != nil {
		d.HashErr = err.Error()
	} else {
		d.Recomputed, d.HashOK = h, h == env.Hash
	}
	var pairs [][2]string
	for _, s := range c.durableSubs(env.Type) {
		pairs = append(pairs, [2]string{env.ID, s})
	}
	states, err := c.workStates(ctx, pairs)
	if err != nil {
		c.failed(w, r, sess, err)
		return
	}
	for _, p := range pairs {
		d.Work = append(d.Work, states[inbox.Key(p[0], p[1])])
	}
	if d.Letters, err = c.cfg.DeadLetters.ForEvent(ctx, tenant, env.ID); err != nil {
		c.failed(w, r, sess, err)
		return
	}
	if c.cfg.Calls != nil {
		d.CallsKnown = true
		calls, err := c.cfg.Calls.ProviderCalls(ctx)
		if err != nil {
			c.failed(w, r, sess, err)
			return
		}
		for _, cl := range calls {
			if strings.HasPrefix(cl.IdempotencyKey, env.ID+":") {
				d.Calls = append(d.Calls, cl)
			}
		}
	}
	c.render(w, r, http.StatusOK, "event", page{Title: fmt.Sprintf("%s #%d", tenant, seq), Nav: "tenants", CSRF: sess.csrf,
		LiveURL: fmt.Sprintf("%stenants/%s/events/%d", Prefix, tenant, seq), Data: d})
}
