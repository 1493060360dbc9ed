package subscribers_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/subscribers"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/attr"
	"github.com/bowline-iot/bowline/engine/worker"
)

func (f *fixture) seedDay(pet, day string, grams string) {
	f.t.Helper()
	f.put(map[string]types.AttributeValue{
		"pk": s(subscribers.IntakePK(f.tenant, pet)), "sk": s(subscribers.IntakeSK(day)),
		"entity": s("intake"), "tenant": s(f.tenant), "pet_tag": s(pet), "day": s(day), "grams": n(grams), "meals": n("2"),
	})
}

func (f *fixture) meal(pet, startedAt string, grams float64) engine.Envelope {
	return f.envelope("bowl.meal_finished", map[string]any{"grams_eaten": grams, "duration_s": 60.0, "started_at": startedAt, "pet_tag": pet})
}

func (f *fixture) appetiteEvents() []engine.Envelope {
	var out []engine.Envelope
	for _, e := range f.events() {
		if e.Type == catalog.TypeAppetiteDropped {
			out = append(out, e)
		}
	}
	return out
}

func TestRecordIntakeEmitsAppetiteDropOnce(t *testing.T) {
	f := newFixture(t, nil)
	pet := "pet-" + randHex(3)
	for d := 2; d <= 8; d++ {
		f.seedDay(pet, fmt.Sprintf("2026-03-%02d", d), "100")
	}
	f.seedDay(pet, "2026-03-09", "30")

	meal := f.meal(pet, "2026-03-10T07:00:00Z", 40)
	if err := f.run(catalog.SubRecordIntake, meal); err != nil {
		t.Fatalf("record_intake = %v; want nil", err)
	}
	today := f.get(subscribers.IntakePK(f.tenant, pet), subscribers.IntakeSK("2026-03-10"))
	if attrN(today, "grams") != "40" || attrN(today, "meals") != "1" || attrS(today, "entity") != "intake" {
		t.Errorf("today's row = %v; want grams 40, meals 1, entity intake", today)
	}
	evs := f.appetiteEvents()
	if len(evs) != 1 {
		t.Fatalf("pet.appetite_dropped events = %d; want 1", len(evs))
	}
	p := evs[0].Payload
	if p["pet_tag"] != pet || p["day"] != "2026-03-09" || p["grams"] != 30.0 || p["average_g"] != 100.0 || p["days"] != 7.0 {
		t.Errorf("appetite payload = %v; want pet %s, day 2026-03-09, grams 30, average 100 over 7 days", p, pet)
	}
	drop, err := catalog.Decode[catalog.AppetiteDropped](evs[0])
	if want := (catalog.AppetiteDropped{PetTag: pet, Day: "2026-03-09", Grams: 30, AverageG: 100, Days: 7}); err != nil || drop != want {
		t.Errorf("Decode[AppetiteDropped] = %+v, %v; want %+v", drop, err, want)
	}
	if evs[0].Tenant != f.tenant {
		t.Errorf("appetite event tenant = %q; want %q (the meal's)", evs[0].Tenant, f.tenant)
	}

	// Redelivery of the same meal (a worker died before completing the
	// claim): nothing is counted or emitted twice.
	if err := f.run(catalog.SubRecordIntake, meal); err != nil {
		t.Fatalf("record_intake again = %v; want nil", err)
	}
	// Another meal the same day adds up and emits nothing.
	if err := f.run(catalog.SubRecordIntake, f.meal(pet, "2026-03-10T18:00:00Z", 25)); err != nil {
		t.Fatalf("second meal = %v; want nil", err)
	}
	today = f.get(subscribers.IntakePK(f.tenant, pet), subscribers.IntakeSK("2026-03-10"))
	if attrN(today, "grams") != "65" || attrN(today, "meals") != "2" {
		t.Errorf("today's row after repeat and second meal = grams %s meals %s; want 65 and 2", attrN(today, "grams"), attrN(today, "meals"))
	}
	if got := len(f.appetiteEvents()); got != 1 {
		t.Errorf("pet.appetite_dropped events after repeat = %d; want 1", got)
	}
}

func TestRecordIntakeJudgesOnlyAFullHistory(t *testing.T) {
	for _, tc := range []struct {
		name  string
		seed  map[string]string // day -> grams
		event bool
	}{
		{"first meal ever", nil, false},
		{"ate well yesterday", map[string]string{"2026-04-01": "100", "2026-04-02": "100", "2026-04-03": "100", "2026-04-04": "80"}, false},
		{"exactly half is not under half", map[string]string{"2026-04-01": "100", "2026-04-02": "100", "2026-04-03": "100", "2026-04-04": "50"}, false},
		{"two days of history are too few", map[string]string{"2026-04-02": "100", "2026-04-03": "100", "2026-04-04": "10"}, false},
		{"yesterday missing (device offline)", map[string]string{"2026-04-01": "100", "2026-04-02": "100", "2026-04-03": "10"}, false},
		{"history older than seven days ignored", map[string]string{"2026-03-20": "1000", "2026-03-21": "1000", "2026-03-22": "1000", "2026-04-01": "100", "2026-04-02": "100", "2026-04-03": "100", "2026-04-04": "49"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			pet := "pet-" + randHex(3)
			for day, g := range tc.seed {
				f.seedDay(pet, day, g)
			}
			if err := f.run(catalog.SubRecordIntake, f.meal(pet, "2026-04-05T08:00:00.123Z", 12.5)); err != nil {
				t.Fatalf("record_intake = %v; want nil", err)
			}
			if got := len(f.appetiteEvents()); got != map[bool]int{true: 1}[tc.event] {
				t.Errorf("pet.appetite_dropped events = %d; want %v", got, tc.event)
			}
			if row := f.get(subscribers.IntakePK(f.tenant, pet), subscribers.IntakeSK("2026-04-05")); attrN(row, "grams") != "12.5" {
				t.Errorf("today's grams = %q; want 12.5", attrN(row, "grams"))
			}
		})
	}
}

// TestIntakeRowAndAppetiteEventAreOneTransaction makes the engine's
// transaction fail (an extra write whose condition fails) and checks that
// neither the intake nor the event was written; then lets it through.
func TestIntakeRowAndAppetiteEventAreOneTransaction(t *testing.T) {
	var sabotage atomic.Bool
	sabotage.Store(true)
	var names string
	f := newFixture(t, func(inner subscribers.Emitter) subscribers.Emitter {
		return emitterFunc(func(ctx context.Context, ev engine.Event) (engine.Envelope, error) {
			if sabotage.Load() {
				ev.Writes = append(ev.Writes, engine.Write{ConditionCheck: &types.ConditionCheck{
					TableName: aws.String(names), ConditionExpression: aws.String("attribute_exists(pk)"),
					Key: map[string]types.AttributeValue{"pk": s("NO-SUCH-ROW"), "sk": s("NONE")},
				}})
			}
			return inner.EmitEvent(ctx, ev)
		})
	})
	names = f.names.AppTable()
	pet := "pet-" + randHex(3)
	for _, d := range []string{"2026-05-01", "2026-05-02", "2026-05-03"} {
		f.seedDay(pet, d, "90")
	}
	f.seedDay(pet, "2026-05-04", "20")
	meal := f.meal(pet, "2026-05-05T09:00:00Z", 30)
	err := f.run(catalog.SubRecordIntake, meal)
	if err == nil || errors.Is(err, worker.ErrTerminal) {
		t.Fatalf("record_intake with a failing transaction = %v; want a retryable error", err)
	}
	if row := f.get(subscribers.IntakePK(f.tenant, pet), subscribers.IntakeSK("2026-05-05")); row != nil {
		t.Errorf("today's row after the failed transaction = %v; want none", row)
	}
	if got := len(f.appetiteEvents()); got != 0 {
		t.Errorf("events after the failed transaction = %d; want 0", got)
	}
	sabotage.Store(false)
	if err := f.run(catalog.SubRecordIntake, meal); err != nil {
		t.Fatalf("record_intake on redelivery = %v; want nil", err)
	}
	row := f.get(subscribers.IntakePK(f.tenant, pet), subscribers.IntakeSK("2026-05-05"))
	if attrN(row, "grams") != "30" || len(f.appetiteEvents()) != 1 {
		t.Errorf("after redelivery: grams %q, %d appetite events; want 30 and 1", attrN(row, "grams"), len(f.appetiteEvents()))
	}
}

func TestBadPayloadsAreTerminal(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct {
		sub string
		env engine.Envelope
	}{
		{catalog.SubRecordIntake, f.envelope("bowl.meal_finished", map[string]any{"pet_tag": "p"})},
		{catalog.SubRecordIntake, f.envelope("bowl.meal_finished", map[string]any{"grams_eaten": -1.0})},
		{catalog.SubRecordIntake, f.envelope("bowl.meal_finished", map[string]any{"grams_eaten": 1.0, "started_at": "yesterday"})},
		{catalog.SubShopifyMirror, f.envelope("com.payment_completed", map[string]any{"order_id": "o1"})},
		{catalog.SubMarkTagOrdered, f.envelope("com.payment_completed", map[string]any{"order_id": "o1", "payment_id": "p", "customer_id": "c"})},
	} {
		err := f.run(tc.sub, tc.env)
		if !errors.Is(err, worker.ErrTerminal) || !errors.Is(err, subscribers.ErrBadPayload) {
			t.Errorf("%s(%v) = %v; want a terminal ErrBadPayload", tc.sub, tc.env.Payload, err)
		}
	}
}

func (f *fixture) payment() engine.Envelope {
	return f.envelope("com.payment_completed", map[string]any{
		"order_id": "o-" + randHex(4), "payment_id": "pay-" + randHex(4), "amount_cents": 4999.0,
		"customer_id": "c1", "pet_id": "p1", "items": []any{map[string]any{"sku": "TAG-001", "qty": 1.0}},
	})
}

func TestPaymentSubscribersCallEachProviderWithTheirKey(t *testing.T) {
	f := newFixture(t, nil)
	env := f.payment()
	for _, sub := range []string{catalog.SubShopifyMirror, catalog.SubBookShipment, catalog.SubNotifyBuyer, catalog.SubMarkTagOrdered} {
		if err := f.run(sub, env); err != nil {
			t.Fatalf("%s = %v; want nil", sub, err)
		}
	}
	for fk, sub := range map[string]string{"shopify": catalog.SubShopifyMirror, "shipping": catalog.SubBookShipment, "notify": catalog.SubNotifyBuyer} {
		var got []string
		for _, x := range f.fakes.All() {
			if x.Kind() == fk {
				for _, c := range x.Calls() {
					got = append(got, c.IdempotencyKey)
				}
			}
		}
		if want := env.ID + ":" + sub; !slices.Equal(got, []string{want}) {
			t.Errorf("%s calls = %v; want [%s]", fk, got, want)
		}
	}
	pet := f.get(subscribers.PetPK(f.tenant, "p1"), subscribers.PetSK)
	if attrS(pet, "tag_status") != "ordered" || attrS(pet, "tag_order_id") != env.Payload["order_id"] || attrS(pet, "entity") != "pet" {
		t.Errorf("pet row = %v; want tag ordered for order %v", pet, env.Payload["order_id"])
	}
	if err := f.run(catalog.SubMarkTagOrdered, env); err != nil {
		t.Errorf("mark_tag_ordered again = %v; want nil (already marked)", err)
	}
}

func TestProviderFailuresMapToWorkerClasses(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct {
		status   int
		terminal bool
	}{
		{http.StatusServiceUnavailable, false},
		{http.StatusTooManyRequests, false},
		{http.StatusInternalServerError, false},
		{http.StatusBadRequest, true},
		// Same Idempotency-Key still in progress, and a request timeout:
		// retried, not dead-lettered.
		{http.StatusConflict, false},
		{http.StatusRequestTimeout, false},
	} {
		f.fakes.Shipping.FailNext(1, tc.status)
		err := f.run(catalog.SubBookShipment, f.payment())
		if err == nil || errors.Is(err, worker.ErrTerminal) != tc.terminal {
			t.Errorf("book_shipment with provider %d = %v; want terminal=%v", tc.status, err, tc.terminal)
		}
	}
}

func TestOwnerNotificationsFollowTheContactDirectory(t *testing.T) {
	f := newFixture(t, nil)
	last := func() (string, string) {
		calls := f.fakes.Notify.Calls()
		if len(calls) == 0 {
			t.Fatal("no notification sent")
		}
		b := string(calls[len(calls)-1].Body)
		return b, calls[len(calls)-1].IdempotencyKey
	}
	low := f.envelope("bowl.food_low", map[string]any{"level_g": 40.0, "threshold_g": 50.0})
	if err := f.run(catalog.SubNotifyOwner, low); err != nil {
		t.Fatal(err)
	}
	if b, key := last(); !strings.Contains(b, `"to":"tenant:`+f.tenant+`"`) || !strings.Contains(b, `"channel":"push"`) || key != low.ID+":notify_owner" {
		t.Errorf("without a contact row: body %s key %s; want a push to tenant:%s keyed %s:notify_owner", b, key, f.tenant, low.ID)
	}
	f.put(map[string]types.AttributeValue{"pk": s(subscribers.ContactPK(f.tenant)), "sk": s(subscribers.ContactSK), "entity": s("contact"), "tenant": s(f.tenant), "channel": s("email"), "address": s("owner@example.org")})
	empty := f.envelope("bowl.empty", map[string]any{})
	if err := f.run(catalog.SubNotifyOwnerEmpty, empty); err != nil {
		t.Fatal(err)
	}
	if b, key := last(); !strings.Contains(b, "owner@example.org") || !strings.Contains(b, `"template":"bowl.empty"`) || key != empty.ID+":notify_owner_empty" {
		t.Errorf("with a contact row: body %s key %s; want email to owner@example.org, template bowl.empty", b, key)
	}
	// The row changes; until the BEST_EFFORT change arrives the cache holds.
	f.put(map[string]types.AttributeValue{"pk": s(subscribers.ContactPK(f.tenant)), "sk": s(subscribers.ContactSK), "entity": s("contact"), "tenant": s(f.tenant), "channel": s("sms"), "address": s("+15550100")})
	change := engine.Envelope{ID: "rec-1", Type: "row.contact.modify", Tenant: f.tenant, Payload: map[string]any{
		"new": map[string]any{"pk": subscribers.ContactPK(f.tenant), "sk": subscribers.ContactSK, "tenant": f.tenant, "channel": "sms", "address": "+15550100"},
	}}
	if err := f.run(catalog.SubContactChanges, change); err != nil {
		t.Fatal(err)
	}
	drop := f.envelope("pet.appetite_dropped", map[string]any{"pet_tag": "p1"})
	if err := f.run(catalog.SubNotifyOwnerAppetite, drop); err != nil {
		t.Fatal(err)
	}
	if b, _ := last(); !strings.Contains(b, "+15550100") || !strings.Contains(b, `"channel":"sms"`) {
		t.Errorf("after row.contact.modify: body %s; want sms to +15550100", b)
	}
	fault := f.envelope("bowl.device_fault", map[string]any{"code": "E42", "detail": "load cell"})
	if err := f.run(catalog.SubNotifySupport, fault); err != nil {
		t.Fatal(err)
	}
	if b, key := last(); !strings.Contains(b, `"to":"support"`) || !strings.Contains(b, "E42") || key != fault.ID+":notify_support" {
		t.Errorf("device fault: body %s key %s; want to support with the code", b, key)
	}
}

func TestEveryCloudSubscriptionIsDeclaredAndBound(t *testing.T) {
	f := newFixture(t, nil)
	c, err := f.set.Bind(catalog.Bowline())
	if err != nil {
		t.Fatalf("Bind = %v; want nil", err)
	}
	if err := c.Check(); err != nil {
		t.Errorf("bound catalog Check = %v; want nil", err)
	}
	for typ, want := range map[string][]string{
		"com.payment_completed": {"shopify_mirror", "book_shipment", "notify_buyer", "mark_tag_ordered"},
		"bowl.meal_finished":    {"record_intake"},
		"bowl.food_low":         {"notify_owner"},
		"bowl.empty":            {"notify_owner_empty"},
		"pet.appetite_dropped":  {"notify_owner_appetite"},
		"bowl.device_fault":     {"notify_support"},
	} {
		var got []string
		for _, sub := range engine.Match(c.Subscriptions, engine.Durable, typ) {
			if sub.Handler == nil {
				t.Errorf("%s has no handler", sub.Name)
			}
			got = append(got, sub.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("DURABLE subscriptions of %s = %v; want %v", typ, got, want)
		}
	}
	rc := engine.Match(c.Subscriptions, engine.BestEffort, "row.contact.modify")
	if len(rc) != 1 || rc[0].Handler == nil {
		t.Errorf("BEST_EFFORT subscriptions of row.contact.modify = %v; want one bound", rc)
	}
}

// TestSupportEmailBoundsAndEscapesDeviceText: a fault's detail is
// device-controlled and may be ~128 KB (the MQTT payload limit): the
// support email gets at most MaxSupportText characters, marked as cut, with
// no line break that could start a mail header and no live markup.
func TestSupportEmailBoundsAndEscapesDeviceText(t *testing.T) {
	f := newFixture(t, nil)
	evil := "jam\r\nBcc: everyone@example.org\r\n\r\n<script>alert(1)</script>" + strings.Repeat("x", 128<<10)
	fault := f.envelope("bowl.device_fault", map[string]any{"code": "E1\nSubject: hi", "detail": evil})
	if err := f.run(catalog.SubNotifySupport, fault); err != nil {
		t.Fatal(err)
	}
	calls := f.fakes.Notify.Calls()
	if len(calls) == 0 {
		t.Fatal("no notification sent")
	}
	var n struct {
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(calls[len(calls)-1].Body, &n); err != nil {
		t.Fatalf("notification body %.200s: %v", calls[len(calls)-1].Body, err)
	}
	detail, _ := n.Data["detail"].(string)
	code, _ := n.Data["code"].(string)
	if limit := subscribers.MaxSupportText + 60; len(detail) > limit || !strings.HasSuffix(detail, "[truncated]") || n.Data["detail_truncated"] != true {
		t.Errorf("detail is %d bytes (truncated %v, ends %q); want at most %d, marked [truncated]", len(detail), n.Data["detail_truncated"], detail[max(0, len(detail)-20):], limit)
	}
	for _, v := range []string{detail, code} {
		if strings.ContainsAny(v, "\r\n<>") {
			t.Errorf("support text %.120q holds a line break or markup; want it escaped", v)
		}
	}
	if !strings.Contains(detail, "&lt;script&gt;") {
		t.Errorf("detail %.120q; want the markup kept as escaped text", detail)
	}
}

// TestDeviceFaultsAreCoalescedPerBowl: 30 faults of one bowl within the
// window send one support e-mail, not 30; a rerun of the fault that was
// e-mailed sends it again under the same idempotency key; another bowl has
// its own window; the first fault after the window is e-mailed with the
// count of those coalesced (29).
func TestDeviceFaultsAreCoalescedPerBowl(t *testing.T) {
	f := newFixture(t, nil)
	fault := func(bowl string, i int) engine.Envelope {
		env := f.envelope("bowl.device_fault", map[string]any{"code": "E42", "detail": fmt.Sprint("load cell ", i)})
		env.Actor = "device:" + bowl
		return env
	}
	toSupport := func() (n int, last map[string]any, key string) {
		for _, c := range f.fakes.Notify.Calls() {
			var body struct {
				To   string         `json:"to"`
				Data map[string]any `json:"data"`
			}
			if err := json.Unmarshal(c.Body, &body); err != nil {
				t.Fatalf("notification body %s: %v", c.Body, err)
			}
			if body.To == "support" {
				n++
				last, key = body.Data, c.IdempotencyKey
			}
		}
		return n, last, key
	}
	var first engine.Envelope
	for i := range 30 {
		env := fault("gw-1:bowl-1", i)
		if i == 0 {
			first = env
		}
		if err := f.run(catalog.SubNotifySupport, env); err != nil {
			t.Fatalf("fault %d: %v", i, err)
		}
	}
	if n, data, key := toSupport(); n != 1 || key != first.ID+":notify_support" || data["coalesced_faults"] != 0.0 {
		t.Fatalf("after 30 faults of one bowl: %d support e-mails (last key %s, data %v); want 1, for the first fault, coalesced_faults 0", n, key, data)
	}
	if err := f.run(catalog.SubNotifySupport, first); err != nil { // a retried handler
		t.Fatal(err)
	}
	if n, _, key := toSupport(); n != 2 || key != first.ID+":notify_support" {
		t.Errorf("rerun of the e-mailed fault: %d calls, last key %s; want a second call with the first fault's key", n, key)
	}
	other := fault("gw-1:bowl-2", 0)
	if err := f.run(catalog.SubNotifySupport, other); err != nil {
		t.Fatal(err)
	}
	if n, _, key := toSupport(); n != 3 || key != other.ID+":notify_support" {
		t.Errorf("another bowl's fault: %d calls, last key %s; want its own e-mail", n, key)
	}
	f.advance(subscribers.DefaultSupportWindow + time.Second)
	next := fault("gw-1:bowl-1", 30)
	if err := f.run(catalog.SubNotifySupport, next); err != nil {
		t.Fatal(err)
	}
	if n, data, key := toSupport(); n != 4 || key != next.ID+":notify_support" || data["coalesced_faults"] != 29.0 {
		t.Errorf("first fault after the window: %d calls, key %s, data %v; want an e-mail with coalesced_faults 29", n, key, data)
	}
	row := f.get(subscribers.SupportPK(f.tenant, "gw-1:bowl-1"), subscribers.SupportSK)
	if got := attr.GetS(row, "event_id"); got != next.ID {
		t.Errorf("support row event_id = %s; want %s", got, next.ID)
	}
}
