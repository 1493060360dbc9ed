package console

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/cloud/guard"
	"github.com/bowline-iot/bowline/engine"
)

// syncLog is a log buffer safe for the console's goroutines.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncLog) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncLog) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// postLogin posts token from peer with headers and returns the answer.
func postLogin(c *Console, peer, token string, header map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/console/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.RemoteAddr = peer
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, req)
	return rec
}

func sessionCookie(rec *httptest.ResponseRecorder) *http.Cookie {
	for _, ck := range rec.Result().Cookies() {
		if ck.Name == CookieName && ck.Value != "" {
			return ck
		}
	}
	return nil
}

// TestOneClickLoginOnlyWhenEnabled: GET /console/login?token= logs in only
// with Config.OneClickLogin (bowline dev); elsewhere it is refused without
// looking at the token.
func TestOneClickLoginOnlyWhenEnabled(t *testing.T) {
	c, _ := newTestConsole(t)
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/console/login?token="+testToken, nil))
	if ck := sessionCookie(rec); ck != nil || rec.Code != http.StatusBadRequest {
		t.Fatalf("GET login?token=<right> without OneClickLogin: %d, cookie %v; want 400 and no session", rec.Code, ck)
	}
	cfg := testConfig(&countingRedriver{})
	cfg.OneClickLogin = true
	dev, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rec = httptest.NewRecorder()
	dev.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/console/login?token="+testToken, nil))
	if ck := sessionCookie(rec); ck == nil || rec.Code != http.StatusSeeOther {
		t.Fatalf("GET login?token=<right> with OneClickLogin: %d, no session; want 303 and a session", rec.Code)
	}
}

// TestWrongLoginsAreLockedOutPerSource: after guard.DefaultBurst wrong
// tokens a source gets 429 even with the right one; another source logs
// in; failures are logged without the token.
func TestWrongLoginsAreLockedOutPerSource(t *testing.T) {
	logs := &syncLog{}
	cfg := testConfig(&countingRedriver{})
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const attacker, other = "203.0.113.9:5000", "198.51.100.7:6000"
	for i := range guard.DefaultBurst {
		if rec := postLogin(c, attacker, "guess-"+strconv.Itoa(i), nil); rec.Code != http.StatusUnauthorized {
			t.Fatalf("wrong login %d: %d; want 401", i+1, rec.Code)
		}
	}
	rec := postLogin(c, attacker, testToken, nil)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" || sessionCookie(rec) != nil {
		t.Fatalf("the right token from the locked source: %d, Retry-After %q; want 429 with Retry-After and no session", rec.Code, rec.Header().Get("Retry-After"))
	}
	if rec := postLogin(c, other, testToken, nil); sessionCookie(rec) == nil {
		t.Fatalf("the right token from another source: %d, no session", rec.Code)
	}
	out := logs.String()
	if n := strings.Count(out, "msg="+guard.FailureMessage); n != guard.DefaultBurst || !strings.Contains(out, "kind=console") {
		t.Errorf("%d failure lines (want %d, kind=console):\n%s", n, guard.DefaultBurst, out)
	}
	if strings.Contains(out, "guess-") || strings.Contains(out, testToken) {
		t.Errorf("a token reached the log:\n%s", out)
	}
}

// TestSessionCookieIsSecureBehindTheTLSProxy: TLS ends at the load
// balancer, so the cookie is Secure (and HSTS is sent) when the trusted
// proxy says the browser used HTTPS, and not on anyone else's word.
func TestSessionCookieIsSecureBehindTheTLSProxy(t *testing.T) {
	cfg := testConfig(&countingRedriver{})
	g, err := guard.New(guard.Config{Proxies: guard.MustParseProxies("10.0.0.0/24"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Guard = g
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	https := map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-For": "198.51.100.7"}
	rec := postLogin(c, "10.0.0.5:40000", testToken, https)
	ck := sessionCookie(rec)
	if ck == nil || !ck.Secure {
		t.Fatalf("login through the TLS balancer: cookie %+v; want Secure", ck)
	}
	if hsts := rec.Header().Get("Strict-Transport-Security"); !strings.HasPrefix(hsts, "max-age=") {
		t.Errorf("Strict-Transport-Security %q over HTTPS; want max-age=...", hsts)
	}
	rec = postLogin(c, "203.0.113.9:5000", testToken, https)
	if ck := sessionCookie(rec); ck == nil || ck.Secure || rec.Header().Get("Strict-Transport-Security") != "" {
		t.Errorf("a plain direct login claiming https: cookie %+v, HSTS %q; want not Secure, no HSTS", ck, rec.Header().Get("Strict-Transport-Security"))
	}
}

// floodDB serves each tenant's event log of n[tenant] events with big
// payloads, in pages.
type floodDB struct {
	emptyDB
	n       map[string]int
	payload string
}

func (f floodDB) item(tenant string, seq uint64) map[string]types.AttributeValue {
	env := engine.Envelope{ID: fmt.Sprintf("ev-%d", seq), Type: "bowl.device_fault", Tenant: tenant, Actor: "device",
		Payload: map[string]any{"thing": "gw-1:bowl-1", "detail": strconv.FormatUint(seq, 10) + f.payload}, Seq: seq, PrevHash: "p", Hash: "h"}
	it, err := engine.EventItem(env)
	if err != nil {
		panic(err)
	}
	return it
}

func (f floodDB) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	sk := in.ExpressionAttributeValues[":after"].(*types.AttributeValueMemberS).Value
	if in.ExclusiveStartKey != nil {
		sk = in.ExclusiveStartKey["sk"].(*types.AttributeValueMemberS).Value
	}
	after, err := strconv.ParseUint(sk, 10, 64)
	if err != nil {
		return nil, err
	}
	pk := in.ExpressionAttributeValues[":pk"].(*types.AttributeValueMemberS).Value
	var tenant string
	for t := range f.n {
		if engine.EventPK(t) == pk {
			tenant = t
		}
	}
	n := uint64(f.n[tenant])
	out := &dynamodb.QueryOutput{}
	for seq := after + 1; seq <= n && len(out.Items) < 100; seq++ {
		out.Items = append(out.Items, f.item(tenant, seq))
	}
	if last := after + uint64(len(out.Items)); last < n {
		out.LastEvaluatedKey = map[string]types.AttributeValue{"sk": &types.AttributeValueMemberS{Value: engine.SeqSK(last)}}
	}
	return out, nil
}

// TestEventCacheIsBounded: a tenant flooding its log keeps at most
// MaxEventsPerTenant events and the cache stays under MaxEventBytes; the
// newest events are the ones kept, a quiet tenant loses nothing, and
// paging stops at the oldest held.
func TestEventCacheIsBounded(t *testing.T) {
	const events = 3000
	db := floodDB{n: map[string]int{"noisy": events, "quiet": 5}, payload: strings.Repeat("x", 4096)}
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	l := newEventLog(db, "events", 1000, 2<<20)
	l.setTenants([]string{"noisy", "quiet"})
	if err := l.tail(context.Background()); err != nil {
		t.Fatal(err)
	}
	// What the cache really holds, against its 2 MiB estimate (measured:
	// 1.1 MB; the estimate counts the payload twice). Generous: other
	// goroutines share the heap. Unbounded, the same log took 16 MB.
	grew := int64(heap()) - int64(before)
	t.Logf("heap grew %d bytes holding the cache", grew)
	if grew > 3*(2<<20) {
		t.Errorf("the heap grew %d bytes holding a cache bounded at %d", grew, 2<<20)
	}
	v, _ := l.view("noisy")
	held := int(uint64(v.Events) - v.Oldest + 1)
	t.Logf("read %d, held seqs %d..%d (%d events), %d bytes estimated", v.Events, v.Oldest, v.Events, held, l.bytes)
	if v.Events != events {
		t.Fatalf("read up to seq %d; want %d", v.Events, events)
	}
	if held > 1000 || l.bytes > 2<<20 {
		t.Fatalf("cache holds %d events, %d bytes; want at most 1000 events and %d bytes", held, l.bytes, 2<<20)
	}
	if q, _ := l.view("quiet"); q.Events != 5 || q.Oldest != 1 {
		t.Fatalf("the quiet tenant holds seqs %d..%d; want all 5", q.Oldest, q.Events)
	}
	newest, _ := l.window("noisy", 0, 1)
	if len(newest) != 1 || newest[0].Seq != events {
		t.Fatalf("newest cached event %+v; want seq %d", newest, events)
	}
	if got, older := l.window("noisy", v.Oldest-1, 10); len(got) != 0 || older != 0 {
		t.Fatalf("a page before the oldest held: %d events, older %d; want none", len(got), older)
	}
	got, _ := l.window("noisy", v.Oldest+5, 10)
	if len(got) != 6 || got[0].Seq != v.Oldest+5 || got[5].Seq != v.Oldest {
		t.Fatalf("a page at the oldest held: %d events from %v", len(got), got)
	}
	// The tail goes on from where it was, not from the cache's length.
	db.n["noisy"] = events + 10
	if err := l.tail(context.Background()); err != nil {
		t.Fatal(err)
	}
	if v, _ := l.view("noisy"); v.Events != events+10 {
		t.Fatalf("after 10 more: read up to seq %d; want %d", v.Events, events+10)
	}
	runtime.KeepAlive(l)
}
