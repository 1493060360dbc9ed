package console_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/console"
	"github.com/bowline-iot/bowline/cloud/dev"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/attr"
	"github.com/bowline-iot/bowline/engine/redrive"
	"github.com/bowline-iot/bowline/engine/relay"
	"github.com/bowline-iot/bowline/engine/worker"
	"github.com/bowline-iot/bowline/firmware-bridge/sim"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/resources"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// One emulator stack for the whole binary; the browser tests run one
// `bowline dev` system on it.
func TestMain(m *testing.M) { lstest.Main(m) }

// Hang guards: generous, the machine is shared and loaded. No test asserts
// how long anything takes.
const (
	waitLong  = 4 * time.Minute
	waitShort = 90 * time.Second
)

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// chromium finds Debian's chromium. Without it the browser tests skip,
// and fail under CI=true (as a missing emulator does).
func chromium(t *testing.T) string {
	t.Helper()
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	testkit.Need(t, errors.New("no chromium on PATH: run ./scripts/setup (as root it installs Debian's chromium), or: apt-get install -y chromium"))
	return ""
}

// browser is one headless chromium for the test, 1280x800.
type browser struct {
	root context.Context
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 800), chromedp.Flag("disable-dev-shm-usage", true))
	alloc, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	root, cancel2 := chromedp.NewContext(alloc)
	t.Cleanup(cancel2)
	if err := chromedp.Do(root); err != nil { // starts the browser
		t.Fatalf("start chromium: %v", err)
	}
	return &browser{root: root}
}

// person is one browser profile (its own cookies) with one tab. Its
// methods fail the test they are given.
type person struct {
	ctx context.Context
}

// newPerson opens a tab in a fresh browser context: no cookie yet.
func (b *browser) newPerson(t *testing.T) *person {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.root, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	return &person{ctx: ctx}
}

// do runs browser steps, failing the test on error.
func (p *person) do(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, waitShort)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func (p *person) open(t *testing.T, url string) {
	t.Helper()
	p.do(t, "open "+url, chromedp.Navigate(url))
}

// js evaluates an expression in the page.
func js[T any](p *person, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(p.ctx, 20*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}

// waitJS waits until expr is true in the page (the live region updates
// by itself; no reload). On timeout it shows what the page shows.
func (p *person) waitJS(t *testing.T, what string, timeout time.Duration, expr string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := js[bool](p, expr)
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) || t.Context().Err() != nil {
			url, _ := js[string](p, `location.href`)
			t.Fatalf("timed out after %s waiting for %s (last error %v); the page at %s shows:\n%s", timeout, what, err, url, p.text())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// text is what the page shows a person.
func (p *person) text() string {
	s, _ := js[string](p, `document.body.innerText`)
	return s
}

// click clicks the element a CSS selector finds, as a person's click does
// (the click event; the live region may be re-rendered around it).
func (p *person) click(t *testing.T, sel string) {
	t.Helper()
	ok, err := js[bool](p, fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false; e.click(); return true })()`, sel))
	if err != nil || !ok {
		t.Fatalf("click %s: not on the page (%v)", sel, err)
	}
}

// noRedrive is a console's redriver that is never used.
type noRedrive struct{}

func (noRedrive) Run(context.Context, redrive.Options) (redrive.Result, error) {
	return redrive.Result{}, errors.New("no redrive in this test")
}

// truthLog keeps the simulator's ground truth.
type truthLog struct {
	mu sync.Mutex
	tr []sim.Truth
}

func (l *truthLog) add(t sim.Truth) { l.mu.Lock(); l.tr = append(l.tr, t); l.mu.Unlock() }

func (l *truthLog) firstMeal(device string) (sim.Truth, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range l.tr {
		if t.Kind == sim.KindMeal && t.Device == device {
			return t, true
		}
	}
	return sim.Truth{}, false
}

// TestConsoleInABrowser drives the console in headless chromium against a
// whole `bowline dev` system and checks what a person sees: a refusal
// without the ops token, a simulated meal in its bowl's timeline, the
// weight chart's points from the stream, a dead letter redriven from the
// page, and a tampered event turning its tenant's chain red.
func TestConsoleInABrowser(t *testing.T) {
	b := newBrowser(t)
	ctx := context.Background()
	names, err := resources.New("c" + randHex(4))
	if err != nil {
		t.Fatal(err)
	}
	truth := &truthLog{}
	// Breakfast yesterday, so no reading lies ahead of the wall clock for
	// long; a first meal in each bowl within simulated minutes.
	y, m, d := time.Now().UTC().AddDate(0, 0, -1).Date()
	start := time.Date(y, m, d, 7, 0, 0, 0, time.UTC)
	sys, err := dev.Start(ctx, dev.Config{
		Names: names, Stack: lstest.Stack(t), Bowls: 2, Tenants: []string{"tenant-1", "tenant-2", "shop", "tamper"},
		Speed: 60, RateHz: 5, Start: start, FirstMealAfter: time.Minute, APIAddr: "127.0.0.1:0",
		RelayPoll: 100 * time.Millisecond, ConsoleRefresh: 500 * time.Millisecond,
		OnTruth: truth.add, Logger: testkit.Logger(t, slog.LevelWarn),
	})
	if err != nil {
		t.Fatalf("dev.Start: %v", err)
	}
	t.Cleanup(func() {
		if err := sys.Close(); err != nil {
			t.Errorf("System.Close: %v", err)
		}
	})
	cfg := sys.Config()
	tokenOf := func(tenant string) string {
		for tok, ten := range cfg.Settings.Tokens {
			if ten == tenant {
				return tok
			}
		}
		t.Fatalf("no API token for tenant %s", tenant)
		return ""
	}
	op := b.newPerson(t)
	op.open(t, sys.LoginURL())
	op.waitJS(t, "the pipeline after the one-click login", waitShort, `!!document.querySelector('ol.pipeline li[data-stage="gateways"]')`)

	t.Run("refuses without the ops token", func(t *testing.T) {
		stranger := b.newPerson(t)
		stranger.open(t, sys.ConsoleURL())
		stranger.waitJS(t, "the login form", waitShort, `!!document.querySelector('input#token')`)
		if txt := stranger.text(); strings.Contains(txt, "Gateways") || strings.Contains(txt, "Dead letters") {
			t.Errorf("without logging in the page shows the console:\n%s", txt)
		}
		stranger.open(t, sys.ConsoleURL()+"login?token=not-the-token")
		if txt := stranger.text(); !strings.Contains(txt, "not the ops token") {
			t.Errorf("a wrong token shows %q; want it refused", txt)
		}
		stranger.open(t, sys.ConsoleURL()+"dead-letters")
		if txt := stranger.text(); !strings.Contains(txt, "Ops token") {
			t.Errorf("dead letters without a session show %q; want the login form", txt)
		}
		// An API without BOWLINE_OPS_TOKEN: the console is disabled.
		a, err := app.Open(app.Config{AWS: lstest.AWSConfig(t), Names: names})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		srv, err := a.API(api.Settings{WebhookSecret: "whsec-test"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv)
		defer hs.Close()
		for _, path := range []string{"/console/", "/console/login?token=" + cfg.Settings.OpsToken, "/console/dead-letters"} {
			stranger.open(t, hs.URL+path)
			if txt := stranger.text(); !strings.Contains(txt, "console is disabled") || !strings.Contains(txt, "BOWLINE_OPS_TOKEN") {
				t.Errorf("%s on an API without the ops token shows %q; want the console disabled", path, txt)
			}
			resp, err := http.Get(hs.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("GET %s on an API without the ops token: %d; want 403", path, resp.StatusCode)
			}
		}
	})

	t.Run("a simulated meal appears in the bowl's timeline", func(t *testing.T) {
		var meal sim.Truth
		testkit.WaitFor(t, "bowl-000's first meal in the simulator", waitLong, func() bool {
			var ok bool
			meal, ok = truth.firstMeal("bowl-000")
			return ok
		})
		op.open(t, sys.ConsoleURL()+"bowls/gw-000:bowl-000")
		// Detection timestamps the meal from the load cell; the truth is
		// the simulator's: within 15 simulated minutes is the same meal.
		lo, hi := meal.Start.Add(-15*time.Minute).UTC().Format(time.RFC3339), meal.End.Add(15*time.Minute).UTC().Format(time.RFC3339)
		dot := fmt.Sprintf(`[...document.querySelectorAll('svg.timeline circle.meal')].some(c => c.dataset.pet === %q && c.dataset.at >= %q && c.dataset.at <= %q)`, meal.PetTag, lo, hi)
		op.waitJS(t, "pet "+meal.PetTag+"'s meal as a dot on bowl-000's timeline", waitLong, dot)
		row := fmt.Sprintf(`[...document.querySelectorAll('table.meals tbody tr')].find(r => r.dataset.pet === %q && r.dataset.at >= %q && r.dataset.at <= %q)`, meal.PetTag, lo, hi)
		op.waitJS(t, "the meal's intake record done", waitLong, row+`?.querySelector('.word')?.textContent === "done"`)
		if txt := op.text(); !strings.Contains(txt, meal.PetTag) {
			t.Errorf("bowl page does not name pet %s", meal.PetTag)
		}
	})

	t.Run("the weight chart has points from the stream", func(t *testing.T) {
		op.open(t, sys.ConsoleURL()+"bowls/gw-001:bowl-001?window=30m")
		op.waitJS(t, "bowl-001's weight chart with points", waitLong, `+document.querySelector('svg.weight-chart')?.dataset.points > 10`)
		label, err := js[string](op, `document.querySelector('svg.weight-chart').getAttribute('aria-label')`)
		if err != nil || !strings.Contains(label, "points from the telemetry stream") {
			t.Errorf("chart label %q (%v); want it to say its points come from the stream", label, err)
		}
		line, err := js[int](op, `document.querySelector('svg.weight-chart polyline.weight-line').points.length`)
		if err != nil || line < 10 {
			t.Errorf("weight line has %d points (%v); want the readings drawn", line, err)
		}
	})

	t.Run("a gap arriving does not move the chart", func(t *testing.T) {
		bowl := sys.Bowls()[1]
		chart := `document.querySelector('svg.weight-chart')`
		op.open(t, sys.ConsoleURL()+"bowls/"+bowl.Thing)
		op.waitJS(t, bowl.Thing+"'s 2 h chart with points", waitLong, `+`+chart+`?.dataset.points > 10`)
		a, err := app.Open(app.Config{AWS: lstest.AWSConfig(t), Names: names})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		// The consumer writes a gap's row at the wall clock (a day ahead
		// of the bowls here) and puts its time on the bowls' clock in
		// missing_since; a hand-made `bowline emit` of a bowl event
		// carries the wall clock only.
		ectx := engine.WithTenant(ctx, bowl.Tenant)
		gap := catalog.DataGap{Thing: bowl.Thing, Lane: "telemetry", Outbox: "o-test", FromSeq: 1000000, ToSeq: 1000009,
			MissingSince: sys.SimNow().Add(-5 * time.Minute).UTC()}
		if _, err := a.Engine.EmitEvent(ectx, engine.Event{Type: catalog.TypeDataGap, Payload: gap, IdempotencyKey: "gap-" + randHex(6)}); err != nil {
			t.Fatalf("emit %s: %v", catalog.TypeDataGap, err)
		}
		refill := map[string]any{"thing": bowl.Thing, "grams_added": 50, "level_g": 300}
		if _, err := a.Engine.EmitEvent(engine.WithActor(ectx, "cli"), engine.Event{Type: catalog.TypeRefilled, Payload: refill}); err != nil {
			t.Logf("emit a refill without device_at (as bowline emit may): %v", err)
		}
		op.waitJS(t, "the gap listed on the bowl's page", waitLong, `[...document.querySelectorAll('tbody tr')].some(r => r.innerText.includes("bowl.data_gap"))`)
		op.waitJS(t, "the chart still showing the bowl's readings after the gap", waitShort, `+`+chart+`?.dataset.points > 10`)
		to, err := js[string](op, chart+`.dataset.to`)
		if err != nil {
			t.Fatal(err)
		}
		end, err := time.Parse(time.RFC3339, to)
		if sim := sys.SimNow(); err != nil || end.Sub(sim).Abs() > 30*time.Minute {
			t.Errorf("chart ends at %q (%v); want the bowls' clock, about %s, not the wall clock %s", to, err, sim.UTC().Format(time.RFC3339), time.Now().UTC().Format(time.RFC3339))
		}
		for _, want := range []string{"bowl time (simulated), UTC", "weight (g)"} {
			if txt, _ := js[string](op, chart+`.textContent`); !strings.Contains(txt, want) {
				t.Errorf("chart's axes do not say %q", want)
			}
		}
		if txt := op.text(); !strings.Contains(txt, "late") || !strings.Contains(txt, "wall clock") {
			t.Errorf("bowl page does not say the gap is late and name the clocks:\n%s", txt)
		}
	})

	t.Run("an unreachable queue turns its dependants red", func(t *testing.T) {
		a, err := app.Open(app.Config{AWS: lstest.AWSConfig(t), Names: names})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		// A console whose SQS client points at a port nobody listens on;
		// everything else is the running system's.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		q := sqs.NewFromConfig(lstest.AWSConfig(t), func(o *sqs.Options) { o.BaseEndpoint, o.RetryMaxAttempts = aws.String("http://"+addr), 1 })
		reg := prometheus.NewRegistry()
		worker.NewMetrics(reg)
		relay.NewMetrics(reg).For("events").Forwarded(0)
		token := "ops-" + randHex(8)
		con, err := console.New(console.Config{
			OpsToken: token, OneClickLogin: true, Names: names, DB: a.DynamoDB, Chains: a.Verifier(), DeadLetters: a.DeadLetters, Inbox: a.Inbox,
			Redriver: noRedrive{}, Subscriptions: a.Catalog.Subscriptions, Queue: q,
			QueueURLs: console.QueueURLs{Events: "http://" + addr + "/000000000000/events.fifo", DLQ: "http://" + addr + "/000000000000/events-dlq.fifo"},
			Rollups:   a.DynamoDB, NoTelemetry: true, Gatherer: reg, Refresh: 500 * time.Millisecond, Logger: testkit.Logger(t, slog.LevelError),
		})
		if err != nil {
			t.Fatal(err)
		}
		rctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = con.Run(rctx) }()
		defer func() { stop(); <-done }()
		hs := httptest.NewServer(con)
		defer hs.Close()
		p := b.newPerson(t)
		p.open(t, hs.URL+"/console/login?token="+token)
		stageOf := func(k string) string { return fmt.Sprintf(`document.querySelector('li[data-stage=%q]')`, k) }
		p.waitJS(t, "the queue stage red", waitShort, stageOf("queue")+`?.dataset.state === "down"`)
		for _, k := range []string{"relay", "worker", "providers"} {
			p.waitJS(t, "the "+k+" stage red as it needs the queue", waitShort, stageOf(k)+`?.dataset.state === "down"`)
			if figs, _ := js[[]string](p, `[...`+stageOf(k)+`.querySelectorAll('dd')].map(d => d.textContent)`); len(figs) == 0 || slices.ContainsFunc(figs, func(f string) bool { return f != "?" }) {
				t.Errorf("%s stage's figures %q; want each ? while its queue cannot be read", k, figs)
			}
		}
		if figs, _ := js[[]string](p, `[...`+stageOf("queue")+`.querySelectorAll('dd')].map(d => d.textContent)`); slices.Contains(figs, "0") {
			t.Errorf("queue stage shows %q; want ? rather than stale zeros", figs)
		}
		note, _ := js[string](p, stageOf("queue")+`.querySelector('.note').innerText`)
		if !strings.Contains(note, addr) || !strings.Contains(note, "unreachable") || !strings.Contains(note, "since") {
			t.Errorf("queue stage says %q; want which service, at %s, unreachable, since when", note, addr)
		}
		if strings.Contains(note, "operation error") {
			t.Errorf("queue stage shows the SDK's text %q in its note; want words, the raw text behind a click", note)
		}
		p.click(t, `li[data-stage="queue"] details.raw summary`)
		if raw, _ := js[string](p, stageOf("queue")+`.querySelector('details.raw code').innerText`); !strings.Contains(raw, addr) {
			t.Errorf("raw error behind the click: %q; want the SDK's text", raw)
		}
		p.waitJS(t, "the banner saying the pipeline is down", waitShort, `document.querySelector('#health [data-health]')?.dataset.health === "down"`)
		if txt, _ := js[string](p, `document.querySelector('#health').innerText`); !strings.Contains(txt, "Queue / DLQ") || !strings.Contains(txt, "Worker") {
			t.Errorf("banner says %q; want the queue and the worker named", txt)
		}
		// At 1024 px the cards wrap instead of running off the page.
		p.do(t, "narrow the window", chromedp.EmulateViewport(1024, 768))
		p.open(t, hs.URL+"/console/")
		p.waitJS(t, "the pipeline at 1024 px", waitShort, `!!`+stageOf("providers"))
		if over, _ := js[string](p, `(() => { const w = document.documentElement.clientWidth; const o = [...document.querySelectorAll('li.stage')].filter(s => s.getBoundingClientRect().right > w + 1).map(s => s.dataset.stage); return document.documentElement.scrollWidth > w + 1 ? "page " + document.documentElement.scrollWidth + " > " + w + " " + o : o.join(",") })()`); over != "" {
			t.Errorf("at 1024 px the pipeline overflows: %s", over)
		}
	})

	t.Run("a dead letter links to its event", func(t *testing.T) {
		notify := sys.Fakes().Set.Notify
		notify.FailAlways(http.StatusBadGateway)
		defer notify.FailNext(0, 0) // the notifier is back, whatever happens here
		c := &dev.Client{URL: sys.APIURL(), Token: tokenOf("shop"), Secret: cfg.Settings.WebhookSecret}
		order, err := c.Order(ctx, "cust-dl", "pet-1", 4999)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := c.Pay(ctx, order, "pay_"+randHex(6), 4999)
		if err != nil {
			t.Fatal(err)
		}
		letter := fmt.Sprintf(`table.letters tr[data-event=%q][data-sub=%q]`, ev, catalog.SubNotifyBuyer)
		// A person who is not logged in follows a link to the dead
		// letters: the login brings them back to it.
		viewer := b.newPerson(t)
		viewer.open(t, sys.ConsoleURL()+"dead-letters?tenant=shop")
		viewer.waitJS(t, "the login form", waitShort, `!!document.querySelector('input#token')`)
		viewer.do(t, "log in with the form", chromedp.SendKeys("#token", cfg.Settings.OpsToken), chromedp.Submit("#token"))
		viewer.waitJS(t, "back on the dead letters of tenant shop after the login", waitShort, `location.pathname === "/console/dead-letters" && location.search === "?tenant=shop"`)
		viewer.waitJS(t, "the notify_buyer dead letter of the payment", waitLong, fmt.Sprintf(`!!document.querySelector('%s a.event-link')`, letter))
		notify.FailNext(0, 0)
		viewer.waitJS(t, "the Dead letters tab counting open letters", waitShort, `+document.querySelector('#nav-letters')?.innerText >= 1`)
		if txt, _ := js[string](viewer, fmt.Sprintf(`document.querySelector('%s a.order-link').innerText`, letter)); !strings.Contains(txt, order) {
			t.Errorf("dead letter's order link says %q; want order %s", txt, order)
		}
		viewer.click(t, letter+` a.event-link`)
		viewer.waitJS(t, "the letter's event page", waitShort, `location.pathname.includes("/events/") && !!document.querySelector('dl.kv')`)
		if txt := viewer.text(); !strings.Contains(txt, ev) || !strings.Contains(txt, catalog.TypePaymentCompleted) {
			t.Errorf("the dead letter's event link shows:\n%s\nwant event %s, %s", txt, ev, catalog.TypePaymentCompleted)
		}
		viewer.open(t, sys.ConsoleURL()+"dead-letters?tenant=shop")
		viewer.waitJS(t, "the letter's order link", waitShort, fmt.Sprintf(`!!document.querySelector('%s a.order-link')`, letter))
		viewer.click(t, letter+` a.order-link`)
		viewer.waitJS(t, "the letter's order on the commerce page", waitShort, fmt.Sprintf(`!!document.querySelector('table.orders tr[data-order=%q]')`, order))
		if n, _ := js[int](viewer, `document.querySelectorAll('table.orders tbody tr[data-order]').length`); n != 1 {
			t.Errorf("the order link shows %d orders; want that one", n)
		}
	})

	t.Run("search finds an order", func(t *testing.T) {
		c := &dev.Client{URL: sys.APIURL(), Token: tokenOf("shop"), Secret: cfg.Settings.WebhookSecret}
		order, err := c.Order(ctx, "cust-search", "pet-3", 4999)
		if err != nil {
			t.Fatal(err)
		}
		// A payment of another amount is refused first; the order shows it.
		if _, err := c.Pay(ctx, order, "pay_"+randHex(6), 4000); err == nil || !strings.Contains(err.Error(), "40.00 USD") {
			t.Errorf("a payment of 40.00 USD for a 49.99 USD order: %v; want refused, saying 40.00 USD", err)
		}
		if _, err := c.Pay(ctx, order, "pay_"+randHex(6), 4999); err != nil {
			t.Fatal(err)
		}
		op.open(t, sys.ConsoleURL()+"commerce")
		op.waitJS(t, "the order on the commerce page", waitLong, fmt.Sprintf(`!!document.querySelector('table.orders tr[data-order=%q]')`, order))
		refused := fmt.Sprintf(`document.querySelector('table.orders tr[data-order=%q] .refused')`, order)
		op.waitJS(t, "the refused payment on its order", waitLong, `!!`+refused)
		if txt, _ := js[string](op, refused+`.innerText`); !strings.Contains(txt, "refused: amount 40.00 USD, expected 49.99 USD") {
			t.Errorf("the order's refused payment says %q; want \"refused: amount 40.00 USD, expected 49.99 USD\"", txt)
		}
		op.do(t, "search for the order", chromedp.SendKeys("#search", order), chromedp.Submit("#search"))
		hit := fmt.Sprintf(`[...document.querySelectorAll('table.hits tr[data-kind="order"] a')].find(a => a.innerText === %q)`, order)
		op.waitJS(t, "the order among the results", waitShort, `!!`+hit)
		if txt, _ := js[string](op, hit+`.closest('tr').innerText`); !strings.Contains(txt, "49.99 USD") {
			t.Errorf("the order's result says %q; want its amount in its currency, 49.99 USD", txt)
		}
		op.click(t, `table.hits tr[data-kind="order"] a`)
		row := fmt.Sprintf(`document.querySelector('table.orders tr[data-order=%q]')`, order)
		op.waitJS(t, "the order's page", waitShort, `!!`+row)
		op.waitJS(t, "the order paid", waitLong, row+`.cells[5].innerText !== "waiting"`)
	})

	t.Run("a dead letter redriven from the page disappears and its provider call happens once", func(t *testing.T) {
		shop := sys.Fakes().Set.Shopify
		shop.FailAlways(http.StatusServiceUnavailable)
		c := &dev.Client{URL: sys.APIURL(), Token: tokenOf("shop"), Secret: cfg.Settings.WebhookSecret}
		order, err := c.Order(ctx, "cust-1", "pet-1", 4999)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := c.Pay(ctx, order, "pay_"+randHex(6), 4999)
		if err != nil {
			t.Fatal(err)
		}
		letter := fmt.Sprintf(`table.letters tr[data-event=%q][data-sub=%q]`, ev, catalog.SubShopifyMirror)
		op.open(t, sys.ConsoleURL()+"dead-letters?tenant=shop")
		op.waitJS(t, "the shopify_mirror dead letter of the payment in the list", waitLong, fmt.Sprintf(`!!document.querySelector('%s input[type=checkbox]')`, letter))
		shop.FailNext(0, 0) // Shopify is back
		op.click(t, letter+` input[type=checkbox]`)
		op.click(t, `#redrive`)
		op.waitJS(t, "the confirmation", waitShort, `!!document.querySelector('#confirm-redrive')`)
		if txt := op.text(); !strings.Contains(txt, ev) || !strings.Contains(txt, "Redrive 1 event") {
			t.Errorf("confirmation shows %q; want the event and the count", txt)
		}
		op.click(t, `#confirm-redrive`)
		op.waitJS(t, "the redrive's result", waitShort, fmt.Sprintf(`!!document.querySelector('section.result tr[data-event=%q]')`, ev))
		op.waitJS(t, "the letter gone from the list", waitLong, fmt.Sprintf(`!document.querySelector('%s')`, letter))
		op.waitJS(t, "shopify_mirror done in the result", waitLong, fmt.Sprintf(`document.querySelector('section.result tr[data-event=%q] .work[data-sub=%q]')?.dataset.state === "done"`, ev, catalog.SubShopifyMirror))
		// Each provider was called successfully once for the event: the
		// redrive did not repeat the work that was already done.
		for _, f := range sys.Fakes().Set.All() {
			for key, n := range f.CountByKey() {
				if !strings.HasPrefix(key, ev+":") {
					continue
				}
				if _, ok := f.CallsWith(key); ok != 1 {
					t.Errorf("%s: %d calls, %d ok for %s; want exactly one that succeeded", f.Kind(), n, ok, key)
				}
			}
		}
		if _, ok := shop.CallsWith(ev + ":" + catalog.SubShopifyMirror); ok != 1 {
			t.Errorf("shopify succeeded %d times for the redriven event; want 1", ok)
		}
	})

	t.Run("tampering with a stored event turns its tenant's chain red at that seq", func(t *testing.T) {
		c := &dev.Client{URL: sys.APIURL(), Token: tokenOf("tamper"), Secret: cfg.Settings.WebhookSecret}
		for i := range 3 {
			if _, err := c.Order(ctx, fmt.Sprintf("cust-%d", i), "pet-9", 4999); err != nil {
				t.Fatal(err)
			}
		}
		row := `document.querySelector('table.tenants tr[data-tenant="tamper"]')`
		op.open(t, sys.ConsoleURL()+"tenants")
		op.waitJS(t, "tenant tamper's chain verified intact at seq 3", waitLong,
			row+`?.querySelector('td.chain')?.dataset.intact === "true" && `+row+`.cells[1].textContent === "3"`)
		ddb := dynamodb.NewFromConfig(lstest.AWSConfig(t), awsenv.DynamoDBOptions)
		_, err := ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(names.EventsTable()), Key: attr.Key(engine.EventPK("tamper"), engine.SeqSK(2)),
			UpdateExpression:          aws.String("SET payload.amount_cents = :v"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": attr.N(1)},
		})
		if err != nil {
			t.Fatalf("tamper with event 2: %v", err)
		}
		op.waitJS(t, "tenant tamper's chain broken at seq 2", waitLong,
			row+`?.querySelector('td.chain')?.dataset.intact === "false" && `+row+`.querySelector('td.chain').dataset.badSeq === "2"`)
		cell := row + `.querySelector('td.chain')`
		if bg, _ := js[string](op, `getComputedStyle(`+cell+`).backgroundColor`); bg != "rgb(255, 235, 233)" {
			t.Errorf("broken chain's cell background %q; want red (rgb(255, 235, 233))", bg)
		}
		if txt, _ := js[string](op, cell+`.innerText`); !strings.Contains(txt, "broken at seq 2") || !strings.Contains(txt, string(engine.ReasonHashMismatch)) {
			t.Errorf("chain cell says %q; want broken at seq 2, hash mismatch", txt)
		}
		if intact, _ := js[string](op, `document.querySelector('table.tenants tr[data-tenant="shop"] td.chain').dataset.intact`); intact != "true" {
			t.Errorf("tenant shop's chain shows intact=%s; want only the tampered tenant red", intact)
		}
		op.open(t, sys.ConsoleURL()+"tenants/tamper/events/2")
		if ok, _ := js[string](op, `document.querySelector('dd.hashcheck').dataset.ok`); ok != "false" {
			t.Errorf("event 2's page shows hash ok=%s; want the recomputed hash to differ", ok)
		}
		op.open(t, sys.ConsoleURL()+"tenants/tamper")
		if red, _ := js[bool](op, `document.querySelector('table.log tr[data-seq="2"]').classList.contains('bad-row')`); !red {
			t.Errorf("seq 2 in tamper's log is not marked bad")
		}
	})

	// After the tamper: the Tenants tab counts a broken chain and the
	// Dead letters tab open letters, on `bowline dev`'s simulated clock.
	t.Run("the header stays on one line on every page", func(t *testing.T) {
		for _, page := range []string{"", "bowls", "bowls/gw-000:bowl-000", "tenants", "tenants/tamper", "tenants/tamper/events/2",
			"dead-letters", "commerce", "search?q=bowl"} {
			op.open(t, sys.ConsoleURL()+page)
			op.checkHeader(t, "/console/"+page, headerOneLine)
		}
	})
}
