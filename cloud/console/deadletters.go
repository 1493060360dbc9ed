package console

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/inbox"
	"github.com/bowline-iot/bowline/engine/redrive"
)

// ingestSubscription is the subscription name cloud/ingest records its
// rejected device messages under: they never reached the queue, so there
// is nothing to redrive; `bowline dead-letters replay --source ingest`
// feeds them back through ingest (docs/dead-letters.md).
const ingestSubscription = "ingest"

var statusRe = regexp.MustCompile(`status (\d{3})`)

// reasonOf sorts a letter's error into a short reason to filter by.
func reasonOf(l deadletter.Letter) string {
	e := l.Error
	if m := statusRe.FindStringSubmatch(e); m != nil {
		return "HTTP " + m[1]
	}
	low := strings.ToLower(e)
	switch {
	case strings.Contains(low, "deadline exceeded") || strings.Contains(low, "timeout"):
		return "timeout"
	case strings.Contains(low, "connection refused"):
		return "provider unreachable"
	}
	if i := strings.IndexByte(e, ':'); i > 0 {
		e = e[:i]
	}
	if len(e) > 40 {
		e = e[:40] + "…"
	}
	return e
}

// letterRow is one dead letter on the page.
type letterRow struct {
	deadletter.Letter
	Reason     string
	Redrivable bool
	// EventLink is the letter's event's page, OrderID its order's id
	// (both "" when this console's event log does not hold the event).
	EventLink, OrderID string
}

// orderLink is the row's order's page.
func (r letterRow) OrderLink() string { return orderLink(r.OrderID) }

// redriveRun is one redrive an operator confirmed, kept to show its result.
type redriveRun struct {
	ID     string
	At     time.Time
	Events []string
	Result redrive.Result
	Err    string
}

// movedView is one moved event of a redrive, with the live state of the
// work it released.
type movedView struct {
	redrive.Item
	Work  []workState
	Calls map[string]int // successful provider calls by subscription
}

type deadLettersPage struct {
	Tenant, Sub, Reason, State string
	Tenants, Subs, Reasons     []string
	Rows                       []letterRow
	Poison                     []deadletter.Letter
	Open, Total                int
	Run                        *redriveRun
	Moved                      []movedView
	// Confirm is set on the confirmation step: the letters selected.
	Confirm []letterRow
	Events  []string
}

// letters reads every letter and applies the page's filters.
func (c *Console) letters(r *http.Request) (deadLettersPage, error) {
	q := r.URL.Query()
	p := deadLettersPage{Tenant: q.Get("tenant"), Sub: q.Get("sub"), Reason: q.Get("reason"), State: q.Get("state")}
	if p.State == "" {
		p.State = "open"
	}
	all, err := c.cfg.DeadLetters.All(r.Context())
	if err != nil {
		return p, err
	}
	tenants, subs, reasons := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, l := range all {
		if l.Poison {
			p.Poison = append(p.Poison, l)
			continue
		}
		row := letterRow{Letter: l, Reason: reasonOf(l), Redrivable: l.Subscription != ingestSubscription && l.Open()}
		p.Total++
		if l.Open() {
			p.Open++
		}
		tenants[l.Tenant], subs[l.Subscription], reasons[row.Reason] = true, true, true
		switch {
		case p.Tenant != "" && l.Tenant != p.Tenant,
			p.Sub != "" && l.Subscription != p.Sub,
			p.Reason != "" && row.Reason != p.Reason,
			p.State == "open" && !l.Open(),
			p.State == "redriven" && l.Open():
			continue
		}
		p.Rows = append(p.Rows, row)
	}
	keys := func(m map[string]bool) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	p.Tenants, p.Subs, p.Reasons = keys(tenants), keys(subs), keys(reasons)
	c.linkLetters(p.Rows)
	c.mu.Lock()
	c.openLetters = p.Open // the tab's count, as fresh as this page
	c.mu.Unlock()
	slices.SortFunc(p.Rows, func(a, b letterRow) int { return b.At.Compare(a.At) })
	return p, nil
}

// linkLetters finds each row's event in the event log cache: its page,
// and the order it belongs to.
func (c *Console) linkLetters(rows []letterRow) {
	want := map[string]map[string]bool{} // tenant -> event ids
	for _, r := range rows {
		if want[r.Tenant] == nil {
			want[r.Tenant] = map[string]bool{}
		}
		want[r.Tenant][r.EventID] = true
	}
	found := map[string]engine.Envelope{}
	for t, ids := range want {
		for _, e := range c.log.events(t, func(e *engine.Envelope) bool { return ids[e.ID] }) {
			found[e.ID] = e
		}
	}
	for i := range rows {
		if e, ok := found[rows[i].EventID]; ok {
			rows[i].EventLink = eventLink(e)
			if com, ok := commerceOf(e); ok {
				rows[i].OrderID = com.Order
			}
		}
	}
}

func (c *Console) deadLettersPage(w http.ResponseWriter, r *http.Request, sess session) {
	p, err := c.letters(r)
	if err != nil {
		c.failed(w, r, sess, err)
		return
	}
	if id := r.URL.Query().Get("redrive"); id != "" {
		c.mu.RLock()
		for _, run := range c.redrives {
			if run.ID == id {
				p.Run = run
			}
		}
		c.mu.RUnlock()
		if p.Run != nil {
			if p.Moved, err = c.movedViews(r, p.Run); err != nil {
				c.failed(w, r, sess, err)
				return
			}
		}
	}
	c.render(w, r, http.StatusOK, "deadletters", page{Title: "Dead letters", Nav: "dead-letters", CSRF: sess.csrf, LiveURL: Prefix + "dead-letters?" + r.URL.RawQuery, Data: p})
}

// movedViews reads the live state of the work a redrive released.
func (c *Console) movedViews(r *http.Request, run *redriveRun) ([]movedView, error) {
	var pairs [][2]string
	for _, it := range run.Result.Moved {
		for _, s := range it.Released {
			pairs = append(pairs, [2]string{it.EventID, s})
		}
	}
	states, err := c.workStates(r.Context(), pairs)
	if err != nil {
		return nil, err
	}
	var calls []ProviderCall
	if c.cfg.Calls != nil {
		if calls, err = c.cfg.Calls.ProviderCalls(r.Context()); err != nil {
			return nil, err
		}
	}
	var out []movedView
	for _, it := range run.Result.Moved {
		mv := movedView{Item: it, Calls: map[string]int{}}
		for _, s := range it.Released {
			mv.Work = append(mv.Work, states[inbox.Key(it.EventID, s)])
			for _, cl := range calls {
				if cl.IdempotencyKey == it.EventID+":"+s && cl.OK() {
					mv.Calls[s]++
				}
			}
		}
		out = append(out, mv)
	}
	return out, nil
}

// redrivePost serves POST /console/dead-letters/redrive: without confirm,
// the confirmation page; with it, the redrive, then the list with its
// result.
func (c *Console) redrivePost(w http.ResponseWriter, r *http.Request, sess session) {
	if err := r.ParseForm(); err != nil {
		c.forbidden(w, r, "bad form: "+err.Error())
		return
	}
	var events []string
	for _, e := range r.PostForm["event"] {
		if e != "" && !slices.Contains(events, e) {
			events = append(events, e)
		}
	}
	if len(events) == 0 {
		http.Redirect(w, r, Prefix+"dead-letters", http.StatusSeeOther)
		return
	}
	if r.PostFormValue("confirm") != "1" {
		p, err := c.letters(r)
		if err != nil {
			c.failed(w, r, sess, err)
			return
		}
		p.Events = events
		for _, row := range p.Rows {
			if slices.Contains(events, row.EventID) {
				p.Confirm = append(p.Confirm, row)
			}
		}
		c.render(w, r, http.StatusOK, "confirm", page{Title: "Confirm redrive", Nav: "dead-letters", CSRF: sess.csrf, Data: p})
		return
	}
	run := &redriveRun{ID: strconv.FormatInt(time.Now().UnixNano(), 36), At: time.Now(), Events: events}
	res, err := c.cfg.Redriver.Run(r.Context(), redrive.Options{EventIDs: events})
	run.Result = res
	if err != nil {
		run.Err = err.Error()
	}
	c.logger.Info("console: redrive", "events", events, "moved", len(res.Moved), "not_found", res.NotFound, "err", err)
	c.mu.Lock()
	c.redrives = append(c.redrives, run)
	if len(c.redrives) > 20 {
		c.redrives = c.redrives[len(c.redrives)-20:]
	}
	c.mu.Unlock()
	c.countLetters(r.Context())
	http.Redirect(w, r, fmt.Sprintf("%sdead-letters?redrive=%s", Prefix, run.ID), http.StatusSeeOther)
}
