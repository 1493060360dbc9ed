package console

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/completeness"
	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/cloud/subscribers"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/attr"
	"github.com/bowline-iot/bowline/engine/inbox"
)

// capacityG is a full bowl, for the food level bar (the simulator's and
// the reference bowl's default).
const capacityG = 400.0

// windows are the weight chart's choices.
var windows = []struct {
	Key string
	D   time.Duration
}{{"30m", 30 * time.Minute}, {"2h", 2 * time.Hour}, {"6h", 6 * time.Hour}, {"24h", 24 * time.Hour}}

// things returns every bowl known to this process and its tenant: the
// registry, the agents and the stream.
func (c *Console) things() map[string]string {
	out := c.telemetry.thingTenants()
	c.mu.RLock()
	for th, t := range c.devices {
		out[th] = t
	}
	c.mu.RUnlock()
	for _, a := range c.cfg.Agents {
		out[a.Thing] = a.Tenant
	}
	return out
}

// bowlEvent is a device event of one bowl, with the device's times.
type bowlEvent struct {
	Env  engine.Envelope
	Type string
	// At is when it happened on the bowls' clock (device_at; a gap's
	// missing_since; a drop's last sample), or, for an event that carries
	// no time of the bowl's (a hand-made `bowline emit`), when it was
	// written on the wall clock: then OnBowlClock is false, it is listed
	// with its clock named and never placed on a chart's axis.
	At          time.Time
	OnBowlClock bool
	Started     time.Time // a meal's start
	Pet         string
	Grams       float64
	Level       float64
	HasLvl      bool
	Detail      string
	Intake      string // record_intake's state, meals only
	// Verdict is a gap's or a drop's: gapLost or gapLate.
	Verdict string
}

// bowlTime is when e happened on the bowls' (gateways') clock: a device
// event's device_at, a gap's missing_since, the last sample of a drop.
// Zero when the event carries none, or its payload does not decode: its
// envelope's occurred_at is the wall clock of whoever wrote it (ingest,
// the consumer, `bowline emit`) and must not be mixed with the bowls'
// times (docs/console.md, "Clocks").
func bowlTime(e engine.Envelope) time.Time {
	switch e.Type {
	case catalog.TypeDataGap:
		if g, ok, _ := gapOf(e); ok {
			return g.MissingSince
		}
		return time.Time{}
	case catalog.TypeTelemetryDropped:
		d, err := catalog.Decode[catalog.TelemetryDropped](e)
		if err != nil || !d.To.IsZero() {
			return d.To
		}
		return d.From
	}
	in, err := catalog.IngestedOf(e)
	if err != nil {
		return time.Time{}
	}
	return in.DeviceAt
}

// bowlEvents returns thing's device events from tenant's log, oldest
// first.
func (c *Console) bowlEvents(tenant, thing string) []bowlEvent {
	envs := c.log.events(tenant, func(e *engine.Envelope) bool {
		th, _ := catalog.ThingOf(*e)
		return th == thing
	})
	out := make([]bowlEvent, 0, len(envs))
	for _, e := range envs {
		b := bowlEvent{Env: e, Type: e.Type, At: bowlTime(e)}
		b.OnBowlClock = !b.At.IsZero()
		if !b.OnBowlClock {
			b.At = e.OccurredAt
		}
		if err := b.describe(); err != nil {
			// Its times are not trusted either: it is listed on the
			// wall clock, off the charts.
			b.Detail = fmt.Sprintf("%s: %v", undecodable, err)
			b.At, b.OnBowlClock = e.OccurredAt, false
		}
		out = append(out, b)
	}
	classifyGaps(out)
	return out
}

// describe fills b's pet, grams, level, start and Detail from its payload
// (its catalog type); err says why the payload did not decode.
func (b *bowlEvent) describe() error {
	e := b.Env
	switch e.Type {
	case catalog.TypeMealFinished:
		p, err := catalog.Decode[catalog.MealFinished](e)
		if err != nil {
			return err
		}
		b.Pet, b.Grams, b.Started = p.PetTag, p.GramsEaten, p.StartedAt
		b.Detail = fmt.Sprintf("%.1f g in %.0f s", b.Grams, p.DurationS)
		if b.Started.IsZero() {
			b.Started = b.At.Add(-time.Duration(p.DurationS * float64(time.Second)))
		}
	case catalog.TypeRefilled:
		p, err := catalog.Decode[catalog.Refilled](e)
		if err != nil {
			return err
		}
		b.Grams, b.Level, b.HasLvl = p.GramsAdded, p.LevelG, true
		b.Detail = fmt.Sprintf("+%.1f g, level %.0f g", b.Grams, b.Level)
	case catalog.TypeDeviceFault:
		p, err := catalog.Decode[catalog.DeviceFault](e)
		if err != nil {
			return err
		}
		b.Detail = fmt.Sprintf("code %v: %v", p.Code, p.Detail)
	case catalog.TypeDataGap:
		g, _, err := gapOf(e)
		if err != nil {
			return err
		}
		b.Detail = fmt.Sprintf("%d records (seq %s) missing", seqCount(g.FromSeq, g.ToSeq), seqRange(g.FromSeq, g.ToSeq))
	case catalog.TypeTelemetryDropped:
		p, err := catalog.Decode[catalog.TelemetryDropped](e)
		if err != nil {
			return err
		}
		b.Detail = fmt.Sprintf("%d records (seq %s) dropped unsent at the gateway: %s", seqCount(p.FromSeq, p.ToSeq), seqRange(p.FromSeq, p.ToSeq), dropReason(p.Reason))
	case catalog.TypeFoodLow:
		p, err := catalog.Decode[catalog.FoodLow](e)
		if err != nil {
			return err
		}
		b.Level, b.HasLvl = p.LevelG, true
		b.Detail = fmt.Sprintf("level %.0f g", b.Level)
	case catalog.TypeEmpty:
		p, err := catalog.Decode[catalog.Empty](e)
		if err != nil {
			return err
		}
		if p.LevelG != nil {
			b.Level, b.HasLvl = *p.LevelG, true
		}
		b.Detail = "empty"
	case catalog.TypeCounterReset:
		if _, err := catalog.Decode[catalog.CounterReset](e); err != nil {
			return err
		}
	}
	return nil
}

// seqCount is how many seqs from..to spans.
func seqCount(from, to uint64) uint64 {
	if to < from {
		return 0
	}
	return to - from + 1
}

// seqRange is from-to.
func seqRange(from, to uint64) string {
	return fmt.Sprintf("%d-%d", from, to)
}

// dropReason says in words where and why a gateway dropped telemetry
// (edge/outbox drop reasons).
func dropReason(r string) string {
	switch r {
	case "disk_cap":
		return "the agent's outbox reached its disk cap"
	case "ttl":
		return "older than the agent's telemetry TTL"
	case "ring", "mcu_ring":
		return "the MCU's ring buffer overflowed"
	}
	return fmt.Sprintf("reason %v", r)
}

// Gap verdicts: lost (a part says it dropped the samples) or late (no
// part says so: the gateway keeps telemetry until the cloud acknowledges
// it and sends it again, so it may still arrive).
const (
	gapLost = "lost"
	gapLate = "late"
)

// classifyGaps says of each bowl.data_gap whether it is lost or late: it
// is lost when a bowl.telemetry_dropped of the same bowl covers any of its
// seqs (the gateway dropped them, and says why), else late.
func classifyGaps(evs []bowlEvent) {
	type span struct {
		from, to uint64
		why      string
	}
	var drops []span
	for _, e := range evs {
		if e.Type != catalog.TypeTelemetryDropped {
			continue
		}
		// A drop that does not decode covers no seqs (its Detail says
		// undecodable).
		if d, err := catalog.Decode[catalog.TelemetryDropped](e.Env); err == nil {
			drops = append(drops, span{d.FromSeq, d.ToSeq, dropReason(d.Reason)})
		}
	}
	for i := range evs {
		e := &evs[i]
		switch e.Type {
		case catalog.TypeTelemetryDropped:
			e.Verdict = gapLost
		case catalog.TypeDataGap:
			e.Verdict = gapLate
			g, ok, _ := gapOf(e.Env)
			if !ok {
				continue // counted late; its Detail says undecodable
			}
			e.Detail += ": not in the cloud yet; the gateway keeps unacknowledged telemetry and sends it again, so it may still arrive"
			f, t := g.FromSeq, g.ToSeq
			for _, d := range drops {
				if d.from <= t && f <= d.to {
					e.Verdict = gapLost
					e.Detail = fmt.Sprintf("%d records (seq %s) lost: dropped at the gateway (%s)", seqCount(f, t), seqRange(f, t), d.why)
					break
				}
			}
		}
	}
}

// bowlCard is one bowl on the list page.
type bowlCard struct {
	Thing, Tenant string
	Agent         agentView
	HasAgent      bool
	Series        seriesView
	Chart         template.HTML
	Meals         int
	LastMeal      *bowlEvent
	Faults        int
	// Lost and Late count the bowl's gaps by verdict (classifyGaps).
	Lost, Late int
	// Age is how old the newest telemetry is on the bowls' clock.
	Age age
}

func (c *Console) bowlsPage(w http.ResponseWriter, r *http.Request, sess session) {
	things := c.things()
	names := make([]string, 0, len(things))
	for th := range things {
		names = append(names, th)
	}
	slices.Sort(names)
	var cards []bowlCard
	for _, th := range names {
		card := bowlCard{Thing: th, Tenant: things[th]}
		card.Agent, card.HasAgent = c.agents.view(th)
		// The window ends at the bowls' clock now: nothing that arrives
		// (an event stamped on another clock, a late record) moves it.
		end := c.now()
		sv, _ := c.telemetry.view(th, end.Add(-2*time.Hour))
		card.Series = sv
		card.Age = ageOf(sv.Last, end)
		evs := c.bowlEvents(card.Tenant, th)
		var marks []chartMark
		for i := range evs {
			switch evs[i].Type {
			case catalog.TypeMealFinished:
				card.Meals++
				card.LastMeal = &evs[i]
				if evs[i].OnBowlClock {
					marks = append(marks, chartMark{Kind: "meal", From: evs[i].Started, To: evs[i].At, Label: "meal " + evs[i].Pet})
				}
			case catalog.TypeDeviceFault:
				card.Faults++
			case catalog.TypeDataGap, catalog.TypeTelemetryDropped:
				if evs[i].Verdict == gapLost {
					card.Lost++
				} else {
					card.Late++
				}
			}
		}
		card.Chart = weightChart(sv, end.Add(-2*time.Hour), end, marks, 0, 0, true, c.bowlClockName())
		cards = append(cards, card)
	}
	c.render(w, r, http.StatusOK, "bowls", page{Title: "Bowls", Nav: "bowls", CSRF: sess.csrf, LiveURL: Prefix + "bowls", Data: cards})
}

// intakeDay is one day of a pet's intake row.
type intakeDay struct {
	Pet   string
	Day   string
	Grams float64
	Meals int
}

// bowlDetail is the bowl page.
type bowlDetail struct {
	Thing, Tenant string
	Agent         agentView
	HasAgent      bool
	Series        seriesView
	Window        string
	Windows       []string
	Chart         template.HTML
	Timeline      template.HTML
	TimelineSpan  time.Duration
	From, To      time.Time
	Level         float64
	LevelPct      int
	// Age is how old the newest telemetry is on the bowls' clock.
	Age       age
	LastLevel *bowlEvent
	Pets      []string
	Meals     []bowlEvent // newest first, at most 20
	Others    []bowlEvent // refills, faults, gaps, low, empty; newest first
	Intake    []intakeDay
	IntakeErr string
	// Complete is the bowl's completeness on its clock's today and
	// yesterday, newest first (cloud/completeness); CompleteErr says why
	// it could not be read.
	Complete    []durable.Statement
	CompleteErr string
}

// completeness states thing's days ending with the bowl-clock day of end:
// one Query of rollup rows per day, the drops and ring refusals from evs
// (the bowl's events this console holds).
func (c *Console) completeness(ctx context.Context, thing string, evs []bowlEvent, end time.Time, days int) ([]durable.Statement, error) {
	envs := make([]engine.Envelope, len(evs))
	for i, e := range evs {
		envs[i] = e.Env
	}
	var out []durable.Statement
	for i := range days {
		day := end.UTC().Truncate(24 * time.Hour).Add(-time.Duration(i) * 24 * time.Hour)
		t, err := durable.ReadDay(ctx, c.cfg.Rollups, c.cfg.Names.TelemetryTable(), thing, day)
		if err != nil {
			return out, err
		}
		drops, refused := completeness.FromEvents(envs, thing, day)
		out = append(out, durable.Account(thing, day, t, drops, refused))
	}
	return out, nil
}

func (c *Console) bowlPage(w http.ResponseWriter, r *http.Request, sess session) {
	thing := r.PathValue("thing")
	tenant, ok := c.things()[thing]
	if !ok {
		c.notFound(w, r, sess, fmt.Sprintf("no bowl %q is known to this console", thing))
		return
	}
	d := bowlDetail{Thing: thing, Tenant: tenant, Window: "2h"}
	win := 2 * time.Hour
	for _, x := range windows {
		d.Windows = append(d.Windows, x.Key)
		if r.URL.Query().Get("window") == x.Key {
			d.Window, win = x.Key, x.D
		}
	}
	d.Agent, d.HasAgent = c.agents.view(thing)
	evs := c.bowlEvents(tenant, thing)
	// The window ends at the bowls' clock now (see bowlsPage).
	end := c.now()
	d.Series, _ = c.telemetry.view(thing, end.Add(-max(win, 24*time.Hour)))
	d.Age = ageOf(d.Series.Last, end)
	if n := len(d.Series.Buckets); n > 0 {
		d.Level = d.Series.Buckets[n-1].avg()
	} else {
		d.Level = d.Series.Value
	}
	d.LevelPct = int(max(0, min(100, d.Level/capacityG*100)))
	pets := map[string]int{}
	var marks []chartMark
	var items []timelineItem
	var mealPairs [][2]string
	for i := range evs {
		e := &evs[i]
		if e.HasLvl && e.Type != catalog.TypeMealFinished {
			d.LastLevel = e
		}
		if !e.OnBowlClock {
			continue // listed below with its clock; never on the bowls' axis
		}
		switch e.Type {
		case catalog.TypeMealFinished:
			idx, seen := pets[e.Pet]
			if !seen {
				idx = len(d.Pets)
				pets[e.Pet] = idx
				d.Pets = append(d.Pets, e.Pet)
			}
			marks = append(marks, chartMark{Kind: "meal", From: e.Started, To: e.At, ColorIndex: idx, Label: fmt.Sprintf("pet %s ate %.1f g", e.Pet, e.Grams)})
			items = append(items, timelineItem{Kind: "meal", Row: idx, At: e.Started, Pet: e.Pet, Grams: e.Grams,
				Label: fmt.Sprintf("pet %s at %s: %s", e.Pet, e.Started.UTC().Format("15:04"), e.Detail)})
			mealPairs = append(mealPairs, [2]string{e.Env.ID, catalog.SubRecordIntake})
		default:
			kind := map[string]string{catalog.TypeRefilled: "refill", catalog.TypeDeviceFault: "fault", catalog.TypeDataGap: "gap",
				catalog.TypeTelemetryDropped: "gap", catalog.TypeFoodLow: "low", catalog.TypeEmpty: "empty"}[e.Type]
			if kind == "" {
				kind = "other"
			}
			dot := kind
			if kind == "gap" {
				dot = "gap-" + e.Verdict // lost red, late amber
			}
			items = append(items, timelineItem{Kind: dot, At: e.At, Label: fmt.Sprintf("%s at %s: %s", e.Type, e.At.UTC().Format("15:04"), e.Detail)})
			switch kind {
			case "refill", "fault":
				marks = append(marks, chartMark{Kind: kind, From: e.At, To: e.At, Label: e.Type + " " + e.Detail})
			case "gap":
				marks = append(marks, chartMark{Kind: "gap-" + e.Verdict, From: e.At, To: e.At, Label: e.Type + " (" + e.Verdict + ") " + e.Detail})
			}
		}
	}
	d.From, d.To = end.Add(-win), end
	d.Chart = weightChart(d.Series, d.From, d.To, marks, 1000, 310, false, c.bowlClockName())
	d.TimelineSpan = timelineSpan(d.Series, evs, end)
	d.Timeline = timeline(d.Pets, items, end.Add(-d.TimelineSpan), end, c.bowlClockName())

	ctx := r.Context()
	if len(mealPairs) > 20 {
		mealPairs = mealPairs[len(mealPairs)-20:]
	}
	states, err := c.workStates(ctx, mealPairs)
	if err != nil {
		c.failed(w, r, sess, err)
		return
	}
	for i := len(evs) - 1; i >= 0; i-- {
		e := evs[i]
		if e.Type == catalog.TypeMealFinished {
			if len(d.Meals) < 20 {
				e.Intake = states[inbox.Key(e.Env.ID, catalog.SubRecordIntake)].Word()
				d.Meals = append(d.Meals, e)
			}
		} else if len(d.Others) < 20 {
			d.Others = append(d.Others, e)
		}
	}
	for _, p := range d.Pets {
		days, err := c.intake(ctx, tenant, p)
		if err != nil {
			d.IntakeErr = err.Error()
			break
		}
		d.Intake = append(d.Intake, days...)
	}
	if d.Complete, err = c.completeness(ctx, thing, evs, end, 2); err != nil {
		d.CompleteErr = err.Error()
	}
	c.render(w, r, http.StatusOK, "bowl", page{Title: "Bowl " + thing, Nav: "bowls", CSRF: sess.csrf, LiveURL: Prefix + "bowls/" + thing + "?window=" + d.Window, Data: d})
}

// intake reads a pet's last days of intake (record_intake's rows).
func (c *Console) intake(ctx context.Context, tenant, pet string) ([]intakeDay, error) {
	out, err := c.cfg.DB.Query(ctx, &dynamodb.QueryInput{
		TableName:              aws.String(c.cfg.Names.AppTable()),
		KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :sk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": attr.S(subscribers.IntakePK(tenant, pet)), ":sk": attr.S(subscribers.IntakeSK("")),
		},
		ScanIndexForward: aws.Bool(false),
		Limit:            aws.Int32(3),
	})
	if err != nil {
		return nil, fmt.Errorf("read intake of pet %s: %w", pet, err)
	}
	var days []intakeDay
	for _, it := range out.Items {
		g := 0.0
		if n, ok := it["grams"].(*types.AttributeValueMemberN); ok {
			fmt.Sscan(n.Value, &g)
		}
		days = append(days, intakeDay{Pet: pet, Day: attr.GetS(it, "day"), Grams: g, Meals: int(attr.GetN(it, "meals"))})
	}
	return days, nil
}

// timelineSpan is the meal timeline's width: what there is of the last
// day, rounded up to 2, 6, 12 or 24 hours.
func timelineSpan(sv seriesView, evs []bowlEvent, end time.Time) time.Duration {
	first := end
	if len(sv.Buckets) > 0 {
		first = time.Unix(sv.Buckets[0].t, 0)
	}
	for _, e := range evs {
		if e.OnBowlClock && e.At.Before(first) {
			first = e.At
		}
	}
	have := end.Sub(first)
	for _, d := range []time.Duration{2 * time.Hour, 6 * time.Hour, 12 * time.Hour} {
		if have <= d {
			return d
		}
	}
	return 24 * time.Hour
}
