package console_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/chromedp/chromedp"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/console"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/inbox"
	"github.com/bowline-iot/bowline/internal/resources"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// A stack with nothing in its tables but broken chains and open dead
// letters: the header at its widest (two counts on the tabs, the
// simulated clock's label, a long stack name).
type wideDB struct{}

func (wideDB) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{}, nil
}
func (wideDB) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return &dynamodb.QueryOutput{}, nil
}
func (wideDB) Scan(context.Context, *dynamodb.ScanInput, ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return &dynamodb.ScanOutput{}, nil
}
func (wideDB) BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return &dynamodb.BatchGetItemOutput{}, nil
}

// brokenChains has twelve tenants, every chain broken at seq 2.
type brokenChains struct{}

func (brokenChains) HeadTenants(context.Context) ([]string, error) {
	var ts []string
	for i := range 12 {
		ts = append(ts, fmt.Sprintf("tenant-%02d", i+1))
	}
	return ts, nil
}

func (brokenChains) VerifyChain(_ context.Context, t string) (engine.ChainReport, error) {
	return engine.ChainReport{Tenant: t, Events: 5, HeadSeq: 5, FirstBadSeq: 2, Reason: engine.ReasonHashMismatch}, nil
}

// openLetters are 120 open dead letters of tenant-01.
type openLetters struct{}

func (openLetters) All(context.Context) ([]deadletter.Letter, error) {
	var ls []deadletter.Letter
	at := time.Now().Add(-time.Hour)
	for i := range 120 {
		ls = append(ls, deadletter.Letter{Tenant: "tenant-01", EventID: fmt.Sprintf("ev-%03d", i), EventType: catalog.TypePaymentCompleted,
			Subscription: catalog.SubNotifyBuyer, Error: "notify: 502 Bad Gateway", Attempts: 5, At: at})
	}
	return ls, nil
}

func (l openLetters) ForEvent(ctx context.Context, tenant, id string) ([]deadletter.Letter, error) {
	all, _ := l.All(ctx)
	var out []deadletter.Letter
	for _, x := range all {
		if x.Tenant == tenant && x.EventID == id {
			out = append(out, x)
		}
	}
	return out, nil
}

type emptyInbox struct{}

func (emptyInbox) Get(context.Context, string, string) (inbox.Row, bool, error) {
	return inbox.Row{}, false, nil
}

type emptyQueues struct{}

func (emptyQueues) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{}}, nil
}

// headerOneLine is a script that says how the page's header lies: ""
// when its parts (brand, stack, tabs, search, clocks and status) share
// one line, the header is no higher than that line, and nothing reaches
// past the window's right edge; else what does not.
const headerOneLine = `(() => {
  const h = document.querySelector('header.top');
  const parts = [...h.children];
  const box = e => e.getBoundingClientRect();
  const name = e => e.tagName.toLowerCase() + (e.className ? '.' + e.className : '');
  const say = e => { const r = box(e); return name(e) + ' at ' + Math.round(r.left) + ',' + Math.round(r.top) + ' (' + Math.round(r.width) + 'x' + Math.round(r.height) + ')' };
  const bad = [];
  const first = parts[0];
  for (const e of parts) {
    if (box(e).top >= box(first).bottom || box(first).top >= box(e).bottom) bad.push(say(e) + ' is not on the line of ' + say(first));
  }
  const tabs = [...h.querySelectorAll('nav a')];
  for (const a of tabs) {
    if (a.offsetTop !== tabs[0].offsetTop) bad.push('tab ' + JSON.stringify(a.innerText) + ' at top ' + a.offsetTop + ', tab 1 at ' + tabs[0].offsetTop);
  }
  const tallest = Math.max(...parts.map(e => box(e).height));
  const pad = parseFloat(getComputedStyle(h).paddingTop) + parseFloat(getComputedStyle(h).paddingBottom);
  if (h.offsetHeight > tallest + pad + 1) bad.push('header ' + h.offsetHeight + ' px high; one line is ' + (tallest + pad) + ': ' + parts.map(say).join('; '));
  const w = document.documentElement.clientWidth;
  for (const e of [h, ...h.querySelectorAll('*')]) {
    if (box(e).width > 0 && box(e).right > w + 1) { bad.push(say(e) + ' reaches past the window (' + w + ' px)'); break; }
  }
  return bad.join('\n');
})()`

// headerFits is a script that says how the header degrades in a narrow
// window: "" when every part is inside the window, no part breaks within
// itself and the search box keeps a usable width; else what does not.
const headerFits = `(() => {
  const h = document.querySelector('header.top');
  const w = document.documentElement.clientWidth;
  const bad = [];
  if (document.documentElement.scrollWidth > w + 1) bad.push('page ' + document.documentElement.scrollWidth + ' px wide in a ' + w + ' px window');
  for (const e of h.querySelectorAll('*')) {
    const r = e.getBoundingClientRect();
    if (r.width > 0 && (r.right > w + 1 || r.left < -1)) bad.push(e.tagName.toLowerCase() + ' ' + JSON.stringify(e.innerText || e.placeholder || '') + ' spans ' + Math.round(r.left) + '..' + Math.round(r.right));
  }
  // A part may move to another line, but not break within itself.
  for (const e of h.querySelectorAll('.brand, .stack, nav a, .clock, #live-status, button')) {
    const boxes = [];
    for (const walk = document.createTreeWalker(e, NodeFilter.SHOW_TEXT); walk.nextNode();) {
      if (walk.currentNode.parentElement.closest('.vh')) continue; // for screen readers only
      const r = document.createRange();
      r.selectNodeContents(walk.currentNode);
      boxes.push(...[...r.getClientRects()].filter(b => b.width > 0));
    }
    if (boxes.some(a => boxes.some(b => b.top >= a.bottom - 1))) bad.push(JSON.stringify(e.innerText) + ' breaks onto ' + new Set(boxes.map(b => Math.round(b.top))).size + ' lines');
  }
  const s = document.querySelector('#search');
  if (s && s.getBoundingClientRect().width < 120) bad.push('search box ' + Math.round(s.getBoundingClientRect().width) + ' px wide');
  return bad.join('\n');
})()`

// checkHeader runs a header script on the page shown, once its live
// region (if it has one) has updated: the update rewrites the clocks and
// the status, so the header is measured as a person sees it.
func (p *person) checkHeader(t *testing.T, page, script string) {
	t.Helper()
	p.do(t, "mark the live region", chromedp.Evaluate[chromedp.Void](`document.getElementById('live')?.prepend(Object.assign(document.createElement('i'), {id: 'before-update'}))`))
	p.waitJS(t, page+" after a live update", waitShort, `!document.getElementById('before-update')`)
	bad, err := js[string](p, script)
	if err != nil {
		t.Errorf("%s: measure the header: %v", page, err)
		return
	}
	if bad != "" {
		w, _ := js[int](p, `document.documentElement.clientWidth`)
		t.Errorf("%s at %d px, the header:\n%s", page, w, bad)
	}
}

// TestHeaderStaysOnOneLine: at 1280x800, the size the console is laid
// out for (docs/console.md, "Keyboard and screen"), every page's header
// keeps its parts on one line at its widest: both tabs counting (12
// broken chains, 120 open letters), the simulated clock's label, a stack
// name of 32 letters, after a live update. At 1024 and 800 px it wraps,
// but whole parts only, inside the window.
func TestHeaderStaysOnOneLine(t *testing.T) {
	names, err := resources.New("bowline-staging-eu-west-1-blue-2")
	if err != nil {
		t.Fatal(err)
	}
	sim := time.Date(2026, 12, 4, 8, 45, 0, 0, time.UTC)
	token := "ops-" + randHex(8)
	con, err := console.New(console.Config{
		OpsToken: token, OneClickLogin: true, Names: names, DB: wideDB{}, Chains: brokenChains{}, DeadLetters: openLetters{},
		Inbox: emptyInbox{}, Redriver: noRedrive{}, Subscriptions: catalog.Bowline().Subscriptions,
		Queue: emptyQueues{}, QueueURLs: console.QueueURLs{Events: "q", DLQ: "dlq"}, Rollups: wideDB{}, NoTelemetry: true,
		SimClock: func() time.Time { return sim }, Refresh: 300 * time.Millisecond, VerifyEvery: 300 * time.Millisecond,
		Logger: testkit.Logger(t, slog.LevelError),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = con.Run(ctx) }()
	t.Cleanup(func() { stop(); <-done })
	hs := httptest.NewServer(con)
	t.Cleanup(hs.Close)

	p := newBrowser(t).newPerson(t)
	p.open(t, hs.URL+"/console/login?token="+token)
	p.waitJS(t, "both tabs counting: 12 broken chains, 120 open letters", waitShort,
		`document.querySelector('#nav-broken')?.innerText.includes("12") && document.querySelector('#nav-letters')?.innerText.includes("120")`)
	pages := []string{"", "bowls", "bowls/gw-001:bowl-001", "tenants", "tenants/tenant-01", "tenants/tenant-01/events/2",
		"dead-letters", "commerce", "commerce?order=o-1", "search?q=bowl", "no-such-page"}
	// The live update brings the header's clocks up to date.
	p.open(t, hs.URL+"/console/")
	was, err := js[string](p, `document.getElementById('wall-clock').innerText`)
	if err != nil || !strings.HasPrefix(was, "wall clock ") {
		t.Fatalf("the header's wall clock says %q (%v); want \"wall clock HH:MM:SS UTC\"", was, err)
	}
	p.waitJS(t, "the header's wall clock to move on from "+was, waitShort, fmt.Sprintf(`document.getElementById('wall-clock').innerText !== %q`, was))
	for _, page := range pages {
		p.open(t, hs.URL+"/console/"+page)
		p.checkHeader(t, "/console/"+page, headerOneLine)
	}
	// The redrive's confirmation is a page of its own.
	p.open(t, hs.URL+"/console/dead-letters")
	p.waitJS(t, "the open letters", waitShort, `!!document.querySelector('table.letters input[name=event]')`)
	p.click(t, `table.letters input[name=event]`)
	p.click(t, `#redrive`)
	p.waitJS(t, "the redrive's confirmation", waitShort, `!!document.querySelector('#confirm-redrive')`)
	p.checkHeader(t, "the redrive's confirmation", headerOneLine)

	for _, w := range []int64{1024, 800} {
		p.do(t, "narrow the window", chromedp.EmulateViewport(w, 768))
		for _, page := range []string{"", "dead-letters"} {
			p.open(t, hs.URL+"/console/"+page)
			p.checkHeader(t, "/console/"+page, headerFits)
		}
	}
}
