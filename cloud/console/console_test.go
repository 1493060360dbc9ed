package console

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/inbox"
	"github.com/bowline-iot/bowline/engine/redrive"
	"github.com/bowline-iot/bowline/internal/resources"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// Stubs for the handler tests: an empty stack.
type emptyDB struct{}

func (emptyDB) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{}, nil
}
func (emptyDB) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return &dynamodb.QueryOutput{}, nil
}
func (emptyDB) Scan(context.Context, *dynamodb.ScanInput, ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return &dynamodb.ScanOutput{}, nil
}
func (emptyDB) BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return &dynamodb.BatchGetItemOutput{}, nil
}

type noChains struct{}

func (noChains) HeadTenants(context.Context) ([]string, error) { return nil, nil }
func (noChains) VerifyChain(_ context.Context, t string) (engine.ChainReport, error) {
	return engine.ChainReport{Tenant: t, Intact: true}, nil
}

type noLetters struct{}

func (noLetters) All(context.Context) ([]deadletter.Letter, error) { return nil, nil }
func (noLetters) ForEvent(context.Context, string, string) ([]deadletter.Letter, error) {
	return nil, nil
}

type noInbox struct{}

func (noInbox) Get(context.Context, string, string) (inbox.Row, bool, error) {
	return inbox.Row{}, false, nil
}

type countingRedriver struct{ runs int }

func (r *countingRedriver) Run(_ context.Context, o redrive.Options) (redrive.Result, error) {
	r.runs++
	return redrive.Result{NotFound: o.EventIDs}, nil
}

type noQueue struct{}

func (noQueue) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{}}, nil
}

const testToken = "ops-secret"

func testConfig(red Redriver) Config {
	names, _ := resources.New("unit")
	return Config{
		OpsToken: testToken, Names: names, DB: emptyDB{}, Chains: noChains{}, DeadLetters: noLetters{},
		Inbox: noInbox{}, Redriver: red, Subscriptions: catalog.Bowline().Subscriptions,
		Queue: noQueue{}, QueueURLs: QueueURLs{Events: "q", DLQ: "dlq"}, Rollups: noRollups{},
	}
}

type noRollups struct{}

func (noRollups) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return &dynamodb.QueryOutput{}, nil
}

func newTestConsole(t *testing.T) (*Console, *countingRedriver) {
	t.Helper()
	red := &countingRedriver{}
	c, err := New(testConfig(red))
	if err != nil {
		t.Fatal(err)
	}
	return c, red
}

func TestNewRefusesWithoutOpsToken(t *testing.T) {
	cfg := testConfig(&countingRedriver{})
	cfg.OpsToken = ""
	if _, err := New(cfg); !errors.Is(err, ErrNoOpsToken) {
		t.Errorf("New(no ops token) = %v; want ErrNoOpsToken", err)
	}
	cfg = testConfig(nil)
	if _, err := New(cfg); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "Redriver") {
		t.Errorf("New(no redriver) = %v; want ErrConfig naming Redriver", err)
	}
	rec := httptest.NewRecorder()
	Disabled("set BOWLINE_OPS_TOKEN").ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/console/", nil))
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "set BOWLINE_OPS_TOKEN") {
		t.Errorf("Disabled: %d %q; want 403 with the reason", rec.Code, rec.Body.String())
	}
}

// login posts the token and returns the session cookie and CSRF token.
func login(t *testing.T, c *Console, token string) (*http.Cookie, string, *httptest.ResponseRecorder) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/console/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, req)
	var ck *http.Cookie
	for _, x := range rec.Result().Cookies() {
		if x.Name == CookieName {
			ck = x
		}
	}
	if ck == nil {
		return nil, "", rec
	}
	get := httptest.NewRequest(http.MethodGet, "/console/tenants", nil)
	get.AddCookie(ck)
	page := httptest.NewRecorder()
	c.ServeHTTP(page, get)
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page.Body.String())
	if m == nil {
		t.Fatalf("logged-in page has no CSRF token:\n%s", page.Body.String())
	}
	return ck, m[1], rec
}

func TestLoginSetsAStrictHttpOnlyCookie(t *testing.T) {
	c, _ := newTestConsole(t)
	// No session: pages send you to the login form, actions are refused.
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/console/", nil))
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/console/login" {
		t.Errorf("GET /console/ without a session: %d to %q; want 303 to /console/login", rec.Code, rec.Header().Get("Location"))
	}
	if _, _, rec := login(t, c, "wrong"); rec.Code != http.StatusUnauthorized || len(rec.Result().Cookies()) != 0 {
		t.Errorf("login with a wrong token: %d, cookies %v; want 401 and no cookie", rec.Code, rec.Result().Cookies())
	}
	ck, _, rec := login(t, c, testToken)
	if ck == nil {
		t.Fatalf("login with the token: %d, no session cookie", rec.Code)
	}
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != Prefix || rec.Code != http.StatusSeeOther {
		t.Errorf("session cookie %+v after %d; want HttpOnly, SameSite=Strict, Path=%s after a 303", ck, rec.Code, Prefix)
	}
	// The one-click form (bowline dev's OneClickLogin): GET ?token= logs
	// in and redirects without it.
	cfg := testConfig(&countingRedriver{})
	cfg.OneClickLogin = true
	dev, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rec = httptest.NewRecorder()
	dev.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/console/login?token="+testToken, nil))
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != Prefix || len(rec.Result().Cookies()) != 1 {
		t.Errorf("GET login?token=: %d to %q, %d cookies; want 303 to %s with the cookie", rec.Code, rec.Header().Get("Location"), len(rec.Result().Cookies()), Prefix)
	}
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("Content-Security-Policy %q; want default-src 'self'", csp)
	}
}

func TestLoginReturnsToThePageAskedFor(t *testing.T) {
	cfg := testConfig(&countingRedriver{})
	cfg.OneClickLogin = true // the one-click form carries next too
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/console/dead-letters?tenant=shop", nil))
	want := "/console/login?next=" + url.QueryEscape("/console/dead-letters?tenant=shop")
	if got := rec.Header().Get("Location"); rec.Code != http.StatusSeeOther || got != want {
		t.Errorf("GET dead-letters without a session: %d to %q; want 303 to %q", rec.Code, got, want)
	}
	for next, to := range map[string]string{
		"/console/dead-letters?tenant=shop": "/console/dead-letters?tenant=shop",
		"/console/bowls/gw-1:bowl-1?live=1": "/console/bowls/gw-1:bowl-1",
		"//evil.example/console/":           Prefix,
		"https://evil.example/console/":     Prefix,
		"/elsewhere":                        Prefix,
		"/console/logout":                   Prefix,
	} {
		rec := httptest.NewRecorder()
		c.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/console/login?token="+testToken+"&next="+url.QueryEscape(next), nil))
		if got := rec.Header().Get("Location"); rec.Code != http.StatusSeeOther || got != to {
			t.Errorf("login with next=%q: %d to %q; want 303 to %q", next, rec.Code, got, to)
		}
	}
}

func TestActionsNeedTheCSRFToken(t *testing.T) {
	c, red := newTestConsole(t)
	ck, csrf, _ := login(t, c, testToken)
	post := func(form url.Values, origin string) int {
		req := httptest.NewRequest(http.MethodPost, "/console/dead-letters/redrive", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		req.AddCookie(ck)
		rec := httptest.NewRecorder()
		c.ServeHTTP(rec, req)
		return rec.Code
	}
	redrive := url.Values{"event": {"01EVENT"}, "confirm": {"1"}}
	if code := post(redrive, ""); code != http.StatusForbidden {
		t.Errorf("redrive without CSRF token: %d; want 403", code)
	}
	redrive.Set("csrf", "zz"+csrf[2:])
	if code := post(redrive, ""); code != http.StatusForbidden {
		t.Errorf("redrive with a wrong CSRF token: %d; want 403", code)
	}
	redrive.Set("csrf", csrf)
	if code := post(redrive, "http://evil.example"); code != http.StatusForbidden {
		t.Errorf("redrive from another origin: %d; want 403", code)
	}
	if red.runs != 0 {
		t.Fatalf("refused requests ran %d redrives; want 0", red.runs)
	}
	// Without confirm the answer is the confirmation page, not a redrive.
	if code := post(url.Values{"event": {"01EVENT"}, "csrf": {csrf}}, "http://example.com"); code != http.StatusOK || red.runs != 0 {
		t.Errorf("redrive without confirm: %d, %d runs; want the confirmation page and no run", code, red.runs)
	}
	if code := post(redrive, "http://example.com"); code != http.StatusSeeOther || red.runs != 1 {
		t.Errorf("confirmed redrive with the token: %d, %d runs; want 303 after one run", code, red.runs)
	}
}

func TestEveryPageRendersEmpty(t *testing.T) {
	c, _ := newTestConsole(t)
	c.Refresh(t.Context())
	ck, _, _ := login(t, c, testToken)
	for _, p := range []string{"", "bowls", "tenants", "dead-letters", "commerce", "dead-letters?live=1", "search", "search?q=nothing", "commerce?order=o-1", "?live=1"} {
		req := httptest.NewRequest(http.MethodGet, Prefix+p, nil)
		req.AddCookie(ck)
		rec := httptest.NewRecorder()
		c.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s%s: %d; want 200:\n%s", Prefix, p, rec.Code, rec.Body.String())
		}
	}
	for _, a := range []string{"console.css", "console.js"} {
		rec := httptest.NewRecorder()
		c.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, Prefix+"assets/"+a, nil))
		if rec.Code != http.StatusOK || rec.Body.Len() < 500 {
			t.Errorf("asset %s: %d, %d bytes; want it embedded", a, rec.Code, rec.Body.Len())
		}
	}
}

func TestWeightChartDrawsTheBuckets(t *testing.T) {
	start := time.Date(2026, 1, 5, 7, 0, 0, 0, time.UTC)
	var s series
	for i := range 60 {
		w := 300 - float64(i)
		s.set(durable.Point{At: start.Add(time.Duration(i) * time.Minute), Kind: weightKind, Count: 60, Min: w - 0.5, Max: w + 0.5, Mean: w, Last: w})
	}
	v := seriesView{Thing: "bowl-000", Buckets: s.buckets, Last: s.last}
	if len(s.buckets) != 60 || s.samples != 3600 {
		t.Fatalf("an hour of rollup minutes of 60 samples: %d buckets, %d samples; want 60, 3600", len(s.buckets), s.samples)
	}
	svg := string(weightChart(v, start, start.Add(2*time.Hour), []chartMark{{Kind: "meal", From: start.Add(10 * time.Minute), To: start.Add(15 * time.Minute)}}, 1000, 300, false, clockBowl))
	m := regexp.MustCompile(`data-points="(\d+)"`).FindStringSubmatch(svg)
	// Two hours in 1 min columns (whole rollup minutes, at most one per
	// 3 px): 120 columns, the first hour's 60 have data.
	if m == nil || m[1] != "60" || !strings.Contains(svg, `class="weight-line"`) || !strings.Contains(svg, "meal-mark") {
		t.Errorf("chart of one hour in a two-hour window: data-points %v; want 60 with a line and a meal mark", m)
	}
	empty := string(weightChart(seriesView{Thing: "x"}, start, start.Add(time.Hour), nil, 1000, 300, false, clockBowl))
	if !strings.Contains(empty, `data-points="0"`) || !strings.Contains(empty, "no readings") {
		t.Errorf("empty chart lacks data-points=0 and its note: %s", empty)
	}
	// The newest reading is an hour before the window's end: the chart
	// marks the rest as lagging, and its axes name the clock and the unit.
	for _, want := range []string{`class="lag-mark"`, `data-lag-from="2026-01-05T07:59:59Z"`, "telemetry lags 60 min", "bowl time, UTC", "weight (g)"} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart whose telemetry ends an hour early lacks %q:\n%s", want, svg)
		}
	}
	fresh := string(weightChart(v, start, start.Add(time.Hour), nil, 1000, 300, false, clockBowl))
	if strings.Contains(fresh, "lag-mark") {
		t.Errorf("chart with readings up to its end marks a lag:\n%s", fresh)
	}
}

func TestGapsSayLostOrLate(t *testing.T) {
	at := "2026-01-05T07:10:00Z"
	env := func(typ string, p map[string]any) engine.Envelope {
		return engine.Envelope{Type: typ, Payload: p, OccurredAt: time.Date(2026, 12, 4, 23, 0, 0, 0, time.UTC)}
	}
	evs := []bowlEvent{
		{Env: env(catalog.TypeDataGap, map[string]any{"from_seq": 10.0, "to_seq": 19.0, "missing_since": at}), Type: catalog.TypeDataGap},
		{Env: env(catalog.TypeDataGap, map[string]any{"from_seq": 40.0, "to_seq": 49.0, "missing_since": at}), Type: catalog.TypeDataGap},
		{Env: env(catalog.TypeTelemetryDropped, map[string]any{"from_seq": 45.0, "to_seq": 60.0, "count": 16.0, "reason": "disk_cap"}), Type: catalog.TypeTelemetryDropped},
	}
	classifyGaps(evs)
	if evs[0].Verdict != gapLate || !strings.Contains(evs[0].Detail, "may still arrive") {
		t.Errorf("a gap no part dropped: %s %q; want late", evs[0].Verdict, evs[0].Detail)
	}
	if evs[1].Verdict != gapLost || !strings.Contains(evs[1].Detail, "disk cap") {
		t.Errorf("a gap the gateway dropped (disk cap): %s %q; want lost, saying where", evs[1].Verdict, evs[1].Detail)
	}
	// A gap is on the bowls' clock (missing_since), not its row's
	// occurred_at; an event without a bowl time is not.
	if got := bowlTime(evs[0].Env); !got.Equal(time.Date(2026, 1, 5, 7, 10, 0, 0, time.UTC)) {
		t.Errorf("bowlTime(data_gap) = %v; want its missing_since", got)
	}
	if got := bowlTime(env(catalog.TypeRefilled, map[string]any{})); !got.IsZero() {
		t.Errorf("bowlTime of an event without device_at = %v; want zero (wall clock only)", got)
	}
}

func TestTimelineDrawsOneDotPerMeal(t *testing.T) {
	from := time.Date(2026, 1, 5, 6, 0, 0, 0, time.UTC)
	svg := string(timeline([]string{"p1", "p2"}, []timelineItem{
		{Kind: "meal", Row: 0, Pet: "p1", At: from.Add(time.Hour), Grams: 20},
		{Kind: "meal", Row: 1, Pet: "p2", At: from.Add(2 * time.Hour), Grams: 30},
		{Kind: "refill", At: from.Add(3 * time.Hour)},
		{Kind: "meal", Row: 0, Pet: "p1", At: from.Add(-time.Hour), Grams: 20}, // before the window
	}, from, from.Add(6*time.Hour), clockBowl))
	if got := strings.Count(svg, `data-kind="meal"`); got != 2 {
		t.Errorf("timeline has %d meal dots; want 2 (one is outside the window)", got)
	}
	if !strings.Contains(svg, `data-pet="p2" data-at="2026-01-05T08:00:00Z"`) || !strings.Contains(svg, `data-kind="refill"`) {
		t.Errorf("timeline lacks p2's meal at 08:00 or the refill:\n%s", svg)
	}
}

func TestReasonOfALetter(t *testing.T) {
	for _, tc := range []struct{ err, want string }{
		{"key e:shopify_mirror: shopify POST /orders: status 503: down", "HTTP 503"},
		{"notify POST /notifications (key k): context deadline exceeded: retryable", "timeout"},
		{"shipping POST /shipments (key k): dial tcp: connection refused: retryable", "provider unreachable"},
		{"schema: grams_eaten must be a number", "schema"},
	} {
		if got := reasonOf(deadletter.Letter{Error: tc.err}); got != tc.want {
			t.Errorf("reasonOf(%q) = %q; want %q", tc.err, got, tc.want)
		}
	}
}

func TestMetricLabelsMatch(t *testing.T) {
	l := map[string]string{"subscription": "shopify_mirror", "outcome": "ok"}
	for _, tc := range []struct {
		match []string
		want  bool
	}{
		{nil, true}, {[]string{"outcome=ok"}, true}, {[]string{"outcome=retry"}, false},
		{[]string{"subscription=shop*"}, true}, {[]string{"subscription!=shopify_mirror"}, false},
	} {
		if got := labelsMatch(l, tc.match); got != tc.want {
			t.Errorf("labelsMatch(%v) = %v; want %v", tc.match, got, tc.want)
		}
	}
}

// TestRefusedPaymentShowsOnItsOrder: a com.payment_refused shows on its
// order's row in the order's currency units, in place of "waiting".
func TestRefusedPaymentShowsOnItsOrder(t *testing.T) {
	c, _ := newTestConsole(t)
	at := time.Date(2026, 1, 5, 7, 0, 0, 0, time.UTC)
	c.log.setTenants([]string{"acme"})
	c.log.mu.Lock()
	c.log.tenants["acme"].events = []engine.Envelope{
		{ID: "01CREATED", Tenant: "acme", Seq: 1, Type: catalog.TypeOrderCreated, OccurredAt: at,
			Payload: map[string]any{"order_id": "o-short", "customer_id": "c1", "pet_id": "p1", "amount_cents": 4999.0, "currency": "USD"}},
		{ID: "01CREATED2", Tenant: "acme", Seq: 2, Type: catalog.TypeOrderCreated, OccurredAt: at.Add(time.Second),
			Payload: map[string]any{"order_id": "o-fine", "customer_id": "c2", "pet_id": "p2", "amount_cents": 1200.0, "currency": "JPY"}},
		{ID: "01REFUSED", Tenant: "acme", Seq: 3, Type: catalog.TypePaymentRefused, OccurredAt: at.Add(time.Minute),
			Payload: map[string]any{"order_id": "o-short", "payment_id": "pay_1", "webhook_id": "evt_1", "reason": "amount",
				"amount_cents": 4000.0, "currency": "USD", "order_amount_cents": 4999.0, "order_currency": "USD"}},
	}
	c.log.mu.Unlock()
	ck, _, _ := login(t, c, testToken)
	req := httptest.NewRequest(http.MethodGet, Prefix+"commerce", nil)
	req.AddCookie(ck)
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, req)
	body := rec.Body.String()
	row := regexp.MustCompile(`(?s)<tr data-order="o-short">.*?</tr>`).FindString(body)
	text := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(row, "")
	if want := "refused: amount 40.00 USD, expected 49.99 USD"; !strings.Contains(text, want) || strings.Contains(text, "waiting") {
		t.Errorf("row of the order with a refused payment lacks %q or still says waiting:\n%s", want, row)
	}
	if !strings.Contains(row, `href="/console/tenants/acme/events/3"`) || !strings.Contains(row, `data-refused="pay_1"`) {
		t.Errorf("the refusal does not link to its event (seq 3) or lacks data-refused=\"pay_1\":\n%s", row)
	}
	// Its payment id finds it.
	req = httptest.NewRequest(http.MethodGet, Prefix+"search?q=pay_1", nil)
	req.AddCookie(ck)
	rec = httptest.NewRecorder()
	c.ServeHTTP(rec, req)
	if want := "refused for order o-short: amount 40.00 USD, expected 49.99 USD"; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("search for the refused payment's id lacks %q:\n%s", want, rec.Body.String())
	}
	other := regexp.MustCompile(`(?s)<tr data-order="o-fine">.*?</tr>`).FindString(body)
	if !strings.Contains(other, "waiting") || strings.Contains(other, "refused") || !strings.Contains(other, "1,200 JPY") {
		t.Errorf("row of the other order: want waiting, 1,200 JPY and no refusal:\n%s", other)
	}
}

// TestUndecodablePayloadsAreShown: an event whose payload does not decode
// into its catalog type (a hand-made row, a retyped field) is still
// listed, said undecodable, and the rows beside it are unharmed.
func TestUndecodablePayloadsAreShown(t *testing.T) {
	c, _ := newTestConsole(t)
	at := time.Date(2026, 1, 5, 7, 0, 0, 0, time.UTC)
	c.log.setTenants([]string{"acme"})
	c.log.mu.Lock()
	c.log.tenants["acme"].events = []engine.Envelope{
		{ID: "01BADORDER", Tenant: "acme", Seq: 1, Type: catalog.TypeOrderCreated, OccurredAt: at,
			Payload: map[string]any{"order_id": "o-bad", "customer_id": "c1", "pet_id": "p1", "amount_cents": "lots", "currency": "USD"}},
		{ID: "01GOODORDER", Tenant: "acme", Seq: 2, Type: catalog.TypeOrderCreated, OccurredAt: at.Add(time.Second),
			Payload: map[string]any{"order_id": "o-good", "customer_id": "c2", "pet_id": "p2", "amount_cents": 4999.0, "currency": "USD"}},
		{ID: "01BADPAY", Tenant: "acme", Seq: 3, Type: catalog.TypePaymentCompleted, OccurredAt: at.Add(time.Minute),
			Payload: map[string]any{"order_id": "o-good", "payment_id": "pay_bad", "amount_cents": []any{1.0}}},
		{ID: "01BADGAP", Tenant: "acme", Seq: 4, Type: catalog.TypeDataGap, OccurredAt: at.Add(2 * time.Minute),
			Payload: map[string]any{"thing": "bowl-1", "lane": "telemetry", "from_seq": "ten", "to_seq": 19.0, "missing_since": "2026-01-05T07:10:00Z"}},
		{ID: "01GOODGAP", Tenant: "acme", Seq: 5, Type: catalog.TypeDataGap, OccurredAt: at.Add(3 * time.Minute),
			Payload: map[string]any{"thing": "bowl-1", "lane": "telemetry", "from_seq": 40.0, "to_seq": 49.0, "missing_since": "2026-01-05T07:20:00Z"}},
		{ID: "01BADMEAL", Tenant: "acme", Seq: 6, Type: catalog.TypeMealFinished, OccurredAt: at.Add(4 * time.Minute),
			Payload: map[string]any{"thing": "bowl-1", "device_event_id": "d-1", "device_at": "2026-01-05T07:30:00Z", "grams_eaten": "lots", "duration_s": 60.0, "pet_tag": "rex"}},
		{ID: "01GOODMEAL", Tenant: "acme", Seq: 7, Type: catalog.TypeMealFinished, OccurredAt: at.Add(5 * time.Minute),
			Payload: map[string]any{"thing": "bowl-1", "device_event_id": "d-2", "device_at": "2026-01-05T07:40:00Z", "grams_eaten": 21.5, "duration_s": 60.0, "pet_tag": "rex"}},
	}
	c.log.mu.Unlock()
	ck, _, _ := login(t, c, testToken)
	get := func(path string) string {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, Prefix+path, nil)
		req.AddCookie(ck)
		rec := httptest.NewRecorder()
		c.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s = %d; want 200:\n%s", path, rec.Code, rec.Body.String())
		}
		return rec.Body.String()
	}
	body := get("commerce")
	rows := regexp.MustCompile(`(?s)<tr data-order="[^"]*">.*?</tr>`).FindAllString(body, -1)
	if len(rows) != 2 {
		t.Fatalf("commerce lists %d orders; want 2 (one undecodable):\n%s", len(rows), body)
	}
	bad := rows[1] // oldest last
	if !strings.Contains(bad, undecodable) || !strings.Contains(bad, "amount_cents") || !strings.Contains(bad, `href="/console/tenants/acme/events/1"`) || strings.Contains(bad, "waiting") {
		t.Errorf("row of the undecodable order: want %q, the failing field in its title, a link to its event and no \"waiting\":\n%s", undecodable, bad)
	}
	// The undecodable payment pays nothing: the good order still waits.
	if good := rows[0]; !strings.Contains(good, `data-order="o-good"`) || !strings.Contains(good, "49.99 USD") || !strings.Contains(good, "waiting") {
		t.Errorf("row of the good order: want o-good, 49.99 USD and waiting:\n%s", good)
	}
	// An undecodable payment is found by its event's id.
	if s := get("search?q=01BADPAY"); !strings.Contains(s, "01BADPAY") {
		t.Errorf("search for the undecodable payment's event id finds nothing:\n%s", s)
	}
	evs := c.bowlEvents("acme", "bowl-1")
	if len(evs) != 4 {
		t.Fatalf("bowl-1 has %d events; want both gaps and both meals, one of each undecodable", len(evs))
	}
	if m := evs[2]; !strings.HasPrefix(m.Detail, undecodable) || !strings.Contains(m.Detail, "grams_eaten") || m.Pet != "" || m.OnBowlClock {
		t.Errorf("undecodable meal: Detail %q, pet %q, on the bowl clock %v; want %q naming grams_eaten, no pet, on the wall clock", m.Detail, m.Pet, m.OnBowlClock, undecodable)
	}
	if m := evs[3]; m.Detail != "21.5 g in 60 s" || m.Pet != "rex" || !m.OnBowlClock {
		t.Errorf("good meal: Detail %q, pet %q, on the bowl clock %v; want \"21.5 g in 60 s\" by rex, on the bowl clock", m.Detail, m.Pet, m.OnBowlClock)
	}
	if !strings.HasPrefix(evs[0].Detail, undecodable) || !strings.Contains(evs[0].Detail, "from_seq") || evs[0].OnBowlClock {
		t.Errorf("undecodable gap: Detail %q, on the bowl clock %v; want %q naming from_seq, on the wall clock", evs[0].Detail, evs[0].OnBowlClock, undecodable)
	}
	if want := "10 records (seq 40-49) missing"; !strings.HasPrefix(evs[1].Detail, want) || !evs[1].OnBowlClock {
		t.Errorf("good gap: Detail %q, on the bowl clock %v; want %q, on the bowl clock", evs[1].Detail, evs[1].OnBowlClock, want)
	}
}

// Validate only checks: the defaults are New's (setDefaults), so a Config
// with every default left zero comes out of Validate unchanged.
func TestValidateKeepsItsConfig(t *testing.T) {
	if err := testkit.ValidateKeeps(t, testConfig(&countingRedriver{})); err != nil {
		t.Errorf("Validate(test config) = %v; want nil", err)
	}
}
