package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/ddbjson"
	"github.com/bowline-iot/bowline/engine/inbox"
	"github.com/bowline-iot/bowline/engine/inbox/seedinbox"
)

// Run builds the binaries, draws the schedule and runs it once per inbox
// mode. timeline receives the schedule and progress lines.
func Run(ctx context.Context, cfg Config, timeline *os.File) (*Report, error) {
	if len(cfg.Inboxes) == 0 {
		cfg.Inboxes = []string{InboxBowline, InboxSeed}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	tmp, err := os.MkdirTemp("", "bowline-chaos-")
	if err != nil {
		return nil, err
	}
	if cfg.Keep {
		fmt.Fprintf(timeline, "keeping logs, outboxes and truth in %s\n", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	fmt.Fprintf(timeline, "building bowline, bowline-edge and seedworker...\n")
	bins, err := Build(ctx, cfg.Root, tmp)
	if err != nil {
		return nil, err
	}
	sched := Schedule(cfg.Seed, cfg.Faults, cfg.Window, cfg.Gateways, ingests, workers)
	PrintTimeline(timeline, cfg.Seed, sched)
	rep := &Report{Seed: cfg.Seed, Config: cfg, Schedule: sched}
	for _, mode := range cfg.Inboxes {
		dir, err := os.MkdirTemp(tmp, mode+"-")
		if err != nil {
			return nil, err
		}
		r := &run{cfg: cfg, mode: mode, bins: bins, dir: dir, log: cfg.Logger.With("inbox", mode), sched: sched, applied: map[string]int{}}
		fmt.Fprintf(timeline, "run with --inbox %s (logs in %s while it runs)\n", mode, dir)
		res, err := r.execute(ctx, timeline)
		r.close()
		if err != nil {
			return rep, fmt.Errorf("inbox %s: %w", mode, err)
		}
		rep.Modes = append(rep.Modes, res)
	}
	return rep, nil
}

// execute runs the load and the schedule, lets the system settle and
// checks the invariants.
func (r *run) execute(ctx context.Context, timeline *os.File) (*ModeResult, error) {
	began := time.Now()
	if err := r.start(ctx); err != nil {
		return nil, err
	}
	start := time.Now()
	pctx, stopPolling := context.WithCancel(ctx)
	polled := make(chan struct{})
	go func() { r.pollGateways(pctx); close(polled) }()
	defer func() { stopPolling(); <-polled }()
	var notes bytes.Buffer
	fctx, cancelFaults := context.WithCancel(ctx)
	defer cancelFaults()
	var wg sync.WaitGroup
	wg.Go(func() { r.applyFaults(fctx, start, &notes) })
	var loadErr error
	wg.Go(func() { loadErr = r.placeOrders(fctx, start) })
	wg.Wait()
	fmt.Fprint(timeline, notes.String())
	if loadErr != nil {
		return nil, loadErr
	}
	if err := r.healAll(ctx); err != nil {
		return nil, err
	}
	fmt.Fprintf(timeline, "  faults over after %.0fs; settling (at most %v)\n", time.Since(start).Seconds(), r.cfg.Settle)
	res := &ModeResult{Inbox: r.mode}
	settled := r.settle(ctx, res)
	if r.mode == InboxSeed {
		if err := r.seedRedrive(ctx, res); err != nil {
			return nil, err
		}
	}
	stopPolling()
	<-polled
	if err := r.check(ctx, res); err != nil {
		return nil, err
	}
	res.Settled = settled
	res.Elapsed = time.Since(began).Round(time.Second).String()
	r.mu.Lock()
	res.FaultsApplied = r.applied
	res.PowerCuts = r.cuts
	r.mu.Unlock()
	for _, p := range r.procs {
		res.Kills += p.kills
	}
	return res, nil
}

// placeOrders places cfg.Orders orders spread over the fault window and
// pays each with a signed webhook, retrying through API outages.
func (r *run) placeOrders(ctx context.Context, start time.Time) error {
	every := r.cfg.Window / time.Duration(max(r.cfg.Orders, 1))
	for i := range r.cfg.Orders {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Until(start.Add(time.Duration(i) * every))):
		}
		tenant := tenantOf(i % r.cfg.Gateways)
		c := r.client(tenant)
		var orderID string
		err := retry(ctx, func() (err error) {
			orderID, err = c.Order(ctx, fmt.Sprintf("cust-%d", i), fmt.Sprintf("pet-%d", i), 0)
			return err
		})
		if err != nil {
			return fmt.Errorf("order %d: %w", i, err)
		}
		var eventID string
		err = retry(ctx, func() (err error) {
			eventID, err = pay(ctx, c, orderID, fmt.Sprintf("pay-%d-%d", r.cfg.Seed, i))
			return err
		})
		if err != nil {
			return fmt.Errorf("pay order %s: %w", orderID, err)
		}
		r.mu.Lock()
		r.paid = append(r.paid, paidOrder{Tenant: tenant, OrderID: orderID, EventID: eventID, PaidAt: time.Now()})
		r.mu.Unlock()
	}
	return nil
}

// retry calls op until it succeeds, for at most two minutes (the API may be
// down or its stores throttled for a while).
func retry(ctx context.Context, op func() error) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := op()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// settle waits until the bowls are done and acknowledged, the telemetry is
// all in Kinesis, the events queue has stayed empty for three polls and,
// with Bowline's inbox, every effect happened; or until cfg.Settle.
func (r *run) settle(ctx context.Context, res *ModeResult) bool {
	deadline := time.Now().Add(r.cfg.Settle)
	empty := 0
	for time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(2 * time.Second)
		simsDone := true
		for _, p := range r.sims {
			simsDone = simsDone && !p.running()
		}
		if !simsDone {
			continue
		}
		d, err := r.queueDepth(ctx, r.sc.Names.EventsQueue())
		if err != nil || d > 0 {
			empty = 0
			continue
		}
		if empty++; empty < 3 {
			continue
		}
		t, err := r.readTelemetry(ctx)
		if err != nil {
			continue
		}
		if _, missing, _ := r.missingFrames(t); missing > 0 {
			continue
		}
		// The telemetry path is quiet once the consumer has acknowledged
		// everything each gateway holds.
		if left, _, err := r.unacked(ctx); err != nil || left > 0 {
			continue
		}
		// An empty events queue says nothing about events still in an edge
		// outbox, a broker session (the rule stand-in's) or the events
		// stream: wait until the chains hold the truth's faults too.
		if short, err := r.faultsShort(ctx); err != nil || short > 0 {
			continue
		}
		if r.mode == InboxSeed || r.effectsDone() {
			return true
		}
	}
	return false
}

// faultsShort counts the truth's device faults not yet in the chains,
// beyond what the MCUs' refusals explain (the check's bound, see check).
func (r *run) faultsShort(ctx context.Context) (int, error) {
	truth, err := r.truthFaults()
	if err != nil {
		return 0, err
	}
	inChain := map[string]bool{} // thing + "/" + detail
	for g := range r.cfg.Gateways {
		chain, err := r.readChain(ctx, tenantOf(g))
		if err != nil {
			return 0, err
		}
		for _, ev := range chain {
			if ev.Type == catalog.TypeDeviceFault {
				// A fault that does not decode matches no fault of the
				// truth.
				if f, err := catalog.Decode[catalog.DeviceFault](ev); err == nil {
					inChain[f.Thing+"/"+f.Detail] = true
				}
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	short := 0
	for thing, details := range truth {
		missing := 0
		for d := range details {
			if !inChain[thing+"/"+d] {
				missing++
			}
		}
		short += max(0, missing-int(r.summary[thing].MCU.Refused))
	}
	return short, nil
}

// effectsDone reports whether every paid order's effects have a 2xx call.
func (r *run) effectsDone() bool {
	r.mu.Lock()
	paid := slices.Clone(r.paid)
	r.mu.Unlock()
	for sub, kind := range effects {
		_, ok, _ := firstCalls(r.fakeOf(kind))
		for _, p := range paid {
			if _, done := ok[p.EventID+":"+sub]; !done && p.EventID != "" {
				return false
			}
		}
	}
	return true
}

// seedRedrive does what the article's runbook says after a fix: move the
// DLQ back to the events queue. The seed inbox does not put dead work in
// the DLQ at all, so the run also sends every event with unfinished
// (pending or dead) inbox rows back to the queue, as a perfect redrive
// would, and counts the rows still unfinished after the queue drains:
// redrives that did nothing.
func (r *run) seedRedrive(ctx context.Context, res *ModeResult) error {
	queue, err := r.app.QueueURL(ctx, r.sc.Names.EventsQueue())
	if err != nil {
		return err
	}
	dlq, err := r.app.QueueURL(ctx, r.sc.Names.EventsDLQ())
	if err != nil {
		return err
	}
	moved, err := seedinbox.Redrive(ctx, r.app.SQS, dlq, queue)
	if err != nil {
		return err
	}
	res.Seed.DLQMoved = len(moved)
	_, open, err := r.inboxRows(ctx)
	if err != nil {
		return err
	}
	for g := range r.cfg.Gateways {
		chain, err := r.readChain(ctx, tenantOf(g))
		if err != nil {
			return err
		}
		for _, ev := range chain {
			if _, ok := open[ev.ID]; !ok {
				continue
			}
			// The body the relay sends: the event row as stored.
			item, err := engine.EventItem(ev)
			if err != nil {
				return err
			}
			body, err := ddbjson.MarshalMap(item)
			if err != nil {
				return err
			}
			_, err = r.app.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(string(body)),
				MessageGroupId: aws.String(ev.Tenant), MessageDeduplicationId: aws.String("replay-" + ev.ID)})
			if err != nil {
				return fmt.Errorf("replay %s: %w", ev.ID, err)
			}
			res.Seed.Replayed += len(open[ev.ID])
		}
	}
	for range 60 {
		if d, err := r.queueDepth(ctx, r.sc.Names.EventsQueue()); err == nil && d == 0 {
			break
		}
		time.Sleep(time.Second)
	}
	_, after, err := r.inboxRows(ctx)
	if err != nil {
		return err
	}
	for id, subs := range after {
		if _, was := open[id]; was {
			res.Seed.RedriveNoEffect += len(subs)
		}
	}
	return nil
}

// check evaluates the invariants.
func (r *run) check(ctx context.Context, res *ModeResult) error {
	if err := r.checkTelemetry(ctx, res); err != nil {
		return err
	}
	r.mu.Lock()
	paid := slices.Clone(r.paid)
	res.BadWebhooksRefused = r.refused
	r.mu.Unlock()
	res.PaidOrders = len(paid)
	tally, err := r.tallyChains(ctx, res)
	if err != nil {
		return err
	}
	res.check("every chain verifies", tally.intact, strings.Join(tally.notes, "; "))
	if err := r.checkDeviceFaults(res, tally.faultDetails); err != nil {
		return err
	}
	res.check("bowl events in the chain once", res.DuplicateBowlEvents == 0, fmt.Sprintf("%d duplicates", res.DuplicateBowlEvents))
	for _, p := range paid {
		if tally.payments[p.OrderID] != 1 {
			res.PaymentMismatch++
		}
	}
	res.check("each paid order has one payment event", res.PaymentMismatch == 0, fmt.Sprintf("%d orders with 0 or 2+", res.PaymentMismatch))
	r.checkEffects(res, paid, tally.paymentEvents)
	if err := r.checkLeftovers(ctx, res); err != nil {
		return err
	}
	res.MaxOrderLatencyS = res.MaxOrderLatency.Seconds()
	return nil
}

// checkTelemetry checks that every acknowledged telemetry frame is in
// Kinesis, then the telemetry path's own invariants.
func (r *run) checkTelemetry(ctx context.Context, res *ModeResult) error {
	t, err := r.readTelemetry(ctx)
	if err != nil {
		return err
	}
	acked, missing, detail := r.missingFrames(t)
	res.Samples, res.AckedFrames, res.LostFrames, res.DuplicateRecords = t.samples, acked, missing, t.duplicates
	res.DuplicateSamples = t.duplicateSamples
	res.check("acked telemetry in Kinesis", missing == 0, strings.Join(detail, "; "))
	return r.checkTelemetryPath(ctx, t, res)
}

// chainTally is what the chains hold, as the checks after tallyChains
// need it.
type chainTally struct {
	// intact is true when every chain verifies; notes say why not.
	intact bool
	notes  []string
	// payments counts payment events per order id; paymentEvents are
	// those events.
	payments      map[string]int
	paymentEvents []engine.Envelope
	// faultDetails holds the details of each thing's device faults.
	faultDetails map[string]map[string]bool
}

// tallyChains verifies every tenant's chain and reads it, counting its
// events into res (chain events, bowl events and their duplicates) and
// the tally.
func (r *run) tallyChains(ctx context.Context, res *ModeResult) (chainTally, error) {
	tally := chainTally{intact: true, payments: map[string]int{}, faultDetails: map[string]map[string]bool{}}
	for g := range r.cfg.Gateways {
		tenant := tenantOf(g)
		rep, err := r.app.Verifier().VerifyChain(ctx, tenant)
		if err != nil {
			return tally, err
		}
		if !rep.Intact {
			tally.intact = false
			tally.notes = append(tally.notes, fmt.Sprintf("%s: %s at seq %d: %s", tenant, rep.Reason, rep.FirstBadSeq, rep.Detail))
		}
		chain, err := r.readChain(ctx, tenant)
		if err != nil {
			return tally, err
		}
		bowl := map[string]int{} // thing/device event id -> events
		for _, ev := range chain {
			res.ChainEvents++
			switch {
			case ev.Type == catalog.TypePaymentCompleted:
				// A payment that does not decode is counted under no
				// order, so its order's check fails.
				p, err := catalog.Decode[catalog.PaymentCompleted](ev)
				if err != nil {
					p = catalog.PaymentCompleted{}
				}
				tally.payments[p.OrderID]++
				tally.paymentEvents = append(tally.paymentEvents, ev)
			case strings.HasPrefix(ev.Type, "bowl.") && ev.Type != catalog.TypeDataGap:
				// A device event that does not decode is counted under no
				// thing and no id, so a second one counts as a duplicate.
				in, _ := catalog.IngestedOf(ev)
				key := in.Thing + "/" + in.DeviceEventID
				if bowl[key]++; bowl[key] == 1 && ev.Type == catalog.TypeDeviceFault {
					// A fault that does not decode is one the truth lacks.
					f, err := catalog.Decode[catalog.DeviceFault](ev)
					thing, detail := f.Thing, f.Detail
					if err != nil {
						thing, _ = catalog.ThingOf(ev)
						detail = "undecodable payload: " + err.Error()
					}
					if tally.faultDetails[thing] == nil {
						tally.faultDetails[thing] = map[string]bool{}
					}
					tally.faultDetails[thing][detail] = true
				}
				res.BowlEvents++
			}
		}
		for _, n := range bowl {
			if n > 1 {
				res.DuplicateBowlEvents += n - 1
			}
		}
	}
	return tally, nil
}

// checkDeviceFaults compares the chains' device faults (inChain: thing
// -> details) with the simulators' truth.
//
// Each fault the run raises has a unique detail. The chain must hold no
// fault the truth lacks; a truth fault missing from the chain is allowed
// only as one of the readings the MCU refused (ring full: it never got a
// sequence number, so the gateway never saw it), and the refusals bound
// how many.
func (r *run) checkDeviceFaults(res *ModeResult, inChain map[string]map[string]bool) error {
	truth, err := r.truthFaults()
	if err != nil {
		return err
	}
	var faultNotes []string
	r.mu.Lock()
	refused := map[string]uint64{}
	for thing, s := range r.summary {
		refused[thing] = s.MCU.Refused
		res.Refused += int(s.MCU.Refused)
	}
	r.mu.Unlock()
	for thing, details := range truth {
		res.DeviceFaults += len(details)
		var missing, invented int
		var absent []string
		for d := range details {
			if !inChain[thing][d] {
				missing++
				absent = append(absent, d)
			}
		}
		slices.Sort(absent)
		for d := range inChain[thing] {
			if !details[d] {
				invented++
			}
		}
		res.DeviceFaultsRefused += missing
		if invented > 0 || uint64(missing) > refused[thing] {
			res.DeviceFaultMismatch += invented + missing
			faultNotes = append(faultNotes, fmt.Sprintf("%s: %d truth faults not in the chain (MCU refused %d readings; first: %s), %d chain faults not in the truth",
				thing, missing, refused[thing], strings.Join(absent[:min(len(absent), 5)], " "), invented))
		}
	}
	res.check("device faults: chain = truth less MCU refusals", res.DeviceFaultMismatch == 0, strings.Join(faultNotes, "; "))
	return nil
}

// checkEffects checks that each payment event reached each provider (a
// 2xx answer) for its subscription, in chain order per tenant; extra
// calls with the same key are absorbed by the provider's idempotency and
// counted.
func (r *run) checkEffects(res *ModeResult, paid []paidOrder, paymentEvents []engine.Envelope) {
	paidBy := map[string]paidOrder{}
	for _, p := range paid {
		paidBy[p.EventID] = p
	}
	slices.SortFunc(paymentEvents, func(a, b engine.Envelope) int {
		if c := strings.Compare(a.Tenant, b.Tenant); c != 0 {
			return c
		}
		return int(a.Seq) - int(b.Seq)
	})
	var lost []string
	for sub, kind := range effects {
		first, ok, n := firstCalls(r.fakeOf(kind))
		var prev time.Time
		prevTenant := ""
		for _, ev := range paymentEvents {
			key := ev.ID + ":" + sub
			res.Effects++
			at, done := ok[key]
			if !done {
				res.LostEffects++
				lost = append(lost, key)
				continue
			}
			res.ExtraCalls += n[key] - 1
			if p, known := paidBy[ev.ID]; known {
				res.MaxOrderLatency = max(res.MaxOrderLatency, at.Sub(p.PaidAt))
			}
			f := first[key]
			if ev.Tenant == prevTenant && f.Before(prev) {
				res.Reordered++
			}
			prev, prevTenant = f, ev.Tenant
		}
	}
	if len(lost) > 5 {
		lost = append(lost[:5], "...")
	}
	res.check("every paid order reached each provider", res.LostEffects == 0, strings.Join(lost, " "))
	res.check("handlers saw each tenant's payments in chain order", res.Reordered == 0, fmt.Sprintf("%d inversions", res.Reordered))
}

// checkLeftovers checks that nothing is left undone: the events DLQ,
// the dead letters, and the inbox rows still pending or dead.
func (r *run) checkLeftovers(ctx context.Context, res *ModeResult) error {
	dlq, err := r.queueDepth(ctx, r.sc.Names.EventsDLQ())
	if err != nil {
		return err
	}
	res.DLQ = dlq
	letters, err := r.app.DeadLetters.All(ctx)
	if err != nil {
		return err
	}
	res.DeadLetters = len(letters)
	res.check("events DLQ empty", dlq == 0, "")
	var ln []string
	for i, l := range letters {
		if i == 3 {
			ln = append(ln, "...")
			break
		}
		ln = append(ln, fmt.Sprintf("%s/%s receive %d: %s", l.EventID, l.Subscription, l.ReceiveCount, l.Error))
	}
	res.check("no dead letters (the run makes no bad event)", len(letters) == 0, strings.Join(ln, "; "))
	counts, _, err := r.inboxRows(ctx)
	if err != nil {
		return err
	}
	res.Seed.PendingRows, res.Seed.DeadRows = counts[inbox.Pending], counts[inbox.Dead]
	return nil
}

// truthFaults returns, per thing, the details of the faults the
// simulators' truth lists (unique per fault in a run).
func (r *run) truthFaults() (map[string]map[string]bool, error) {
	out := map[string]map[string]bool{}
	for g := range r.cfg.Gateways {
		f, err := os.Open(r.truthPath(g))
		if err != nil {
			return nil, fmt.Errorf("truth of simulator %d: %w", g, err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var t struct{ Kind, Device, Detail string }
			if json.Unmarshal(sc.Bytes(), &t) == nil && t.Kind == "fault" {
				thing := thingOfDevice(g, t.Device)
				if out[thing] == nil {
					out[thing] = map[string]bool{}
				}
				out[thing][t.Detail] = true
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("truth of simulator %d: %w", g, err)
		}
	}
	return out, nil
}
