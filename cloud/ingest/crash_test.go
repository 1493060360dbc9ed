package ingest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/cloud/app"

	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/resources"
)

// crashChildEnv selects the child mode of the test binary: TestMain runs one
// ingest process (crashChild) instead of the tests. The other variables
// carry its client id and group.
const (
	crashChildEnv  = "BOWLINE_INGEST_CRASH_CHILD"
	crashClientEnv = "BOWLINE_INGEST_CRASH_CLIENT_ID"
	crashGroupEnv  = "BOWLINE_INGEST_CRASH_GROUP"
	crashReadyLine = "ingest ready"
	// Optional child settings (sessions_test.go): another broker, leased
	// slots instead of a fixed client id, the lease TTL, gap timing, and
	// an "acked <thing> <kind> <seq>" line on stdout per ack.
	crashBrokerEnv   = "BOWLINE_INGEST_CRASH_BROKER"
	crashSlotsEnv    = "BOWLINE_INGEST_CRASH_SLOTS"
	crashLeaseEnv    = "BOWLINE_INGEST_CRASH_LEASE_TTL"
	crashGraceEnv    = "BOWLINE_INGEST_CRASH_GAP_GRACE"
	crashCheckEnv    = "BOWLINE_INGEST_CRASH_GAP_CHECK"
	crashAcksEnv     = "BOWLINE_INGEST_CRASH_ACKS"
	crashAckedPrefix = "acked "
)

// ackPrinter prints each ack on stdout for the parent test.
type ackPrinter struct {
	ingest.NopObserver
	mu sync.Mutex
}

func (p *ackPrinter) Acked(a ingest.Ack) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Printf("%s%s %s %d\n", crashAckedPrefix, a.Thing, a.Kind, a.Seq)
}

// childConfig reads the child's ingest settings from the environment.
func childConfig() (ingest.Config, error) {
	cfg := ingest.Config{
		Broker:   os.Getenv("BOWLINE_MQTT_URL"),
		ClientID: os.Getenv(crashClientEnv),
		Group:    os.Getenv(crashGroupEnv),
	}
	if b := os.Getenv(crashBrokerEnv); b != "" {
		cfg.Broker = b
	}
	if v := os.Getenv(crashSlotsEnv); v != "" {
		if _, err := fmt.Sscan(v, &cfg.Slots); err != nil {
			return cfg, fmt.Errorf("%s=%q: %w", crashSlotsEnv, v, err)
		}
	}
	for env, d := range map[string]*time.Duration{crashLeaseEnv: &cfg.LeaseTTL, crashGraceEnv: &cfg.GapGrace, crashCheckEnv: &cfg.GapFlushInterval} {
		if v := os.Getenv(env); v != "" {
			var err error
			if *d, err = time.ParseDuration(v); err != nil {
				return cfg, fmt.Errorf("%s=%q: %w", env, v, err)
			}
		}
	}
	if os.Getenv(crashAcksEnv) != "" {
		cfg.Observer = &ackPrinter{}
	}
	return cfg, nil
}

// crashChild is the child process: ingest.New(...).Run against the stack
// named by the environment (AWS_ENDPOINT_URL_*, BOWLINE_STACK,
// BOWLINE_MQTT_URL), printing crashReadyLine once subscribed. It ends on
// SIGTERM, or dies on the test's SIGKILL.
func crashChild() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "crash child: %v\n", err)
		return 1
	}
	awsCfg, err := awsenv.Load(ctx)
	if err != nil {
		return fail(err)
	}
	names, err := resources.FromEnv()
	if err != nil {
		return fail(err)
	}
	a, err := app.Open(app.Config{AWS: awsCfg, Names: names})
	if err != nil {
		return fail(err)
	}
	defer a.Close()
	cfg, err := childConfig()
	if err != nil {
		return fail(err)
	}
	in, err := a.Ingest(cfg)
	if err != nil {
		return fail(err)
	}
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	select {
	case <-in.Ready():
		fmt.Println(crashReadyLine)
	case err := <-done:
		return fail(fmt.Errorf("run ended before subscribing: %v", err))
	}
	if err := <-done; err != nil {
		return fail(err)
	}
	return 0
}

// syncBuffer collects a child's stderr for the test log.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// ingestProc is one ingest child process.
type ingestProc struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once Wait returned
	err    error         // Wait's result, set before exited closes
	ready  chan bool     // receives true once subscribed, false if it exited first
}

// startIngestProc starts an ingest child with clientID and group, waits until
// it has subscribed, and makes sure it is killed and reaped when the test
// ends.
func startIngestProc(t *testing.T, clientID, group string, stderr *syncBuffer) *ingestProc {
	t.Helper()
	p := spawnIngestProc(t, stderr, nil, crashClientEnv+"="+clientID, crashGroupEnv+"="+group)
	p.waitReady(t, stderr)
	return p
}

// spawnIngestProc starts an ingest child with the extra environment env,
// passing every other stdout line to onLine (when not nil); it does not
// wait for the child to subscribe (waitReady does). The child is killed
// and reaped when the test ends.
func spawnIngestProc(t *testing.T, stderr *syncBuffer, onLine func(string), env ...string) *ingestProc {
	t.Helper()
	stack := lstest.Stack(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), stack.Env()...)
	cmd.Env = append(cmd.Env, "BOWLINE_STACK="+lstest.Names(t).Stack, crashChildEnv+"=1")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start ingest child %s: %v", os.Args[0], err)
	}
	p := &ingestProc{cmd: cmd, exited: make(chan struct{}), ready: make(chan bool, 1)}
	go func() {
		sc := bufio.NewScanner(out)
		ok := false
		for sc.Scan() {
			switch line := sc.Text(); {
			case line == crashReadyLine && !ok:
				ok = true
				p.ready <- true
			case onLine != nil:
				onLine(line)
			}
		}
		if !ok {
			p.ready <- false
		}
		p.err = cmd.Wait() // after stdout is drained, as Wait closes it
		close(p.exited)
	}()
	t.Cleanup(p.kill)
	return p
}

// waitReady waits until the child has subscribed; it fails the test when
// the child exits first or takes longer than hangGuard.
func (p *ingestProc) waitReady(t *testing.T, stderr *syncBuffer) {
	t.Helper()
	select {
	case ok := <-p.ready:
		if !ok {
			<-p.exited
			t.Fatalf("ingest child exited before subscribing (%v); stderr:\n%s", p.err, stderr.String())
		}
	case <-time.After(hangGuard):
		t.Fatalf("ingest child never subscribed; stderr:\n%s", stderr.String())
	}
}

// kill sends SIGKILL and reaps the process; calling it again is harmless.
func (p *ingestProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// TestIngestSurvivesKill9 kills real ingest processes (this test binary
// re-executed in child mode) with SIGKILL several times, at random moments
// while bowls publish QoS 1 device events, restarting each time
// with the same MQTT client id. The embedded broker lives in the test process
// and keeps that client's persistent session, so messages in flight or
// queued during the outage are redelivered. Once the stream settles it
// proves:
//   - nothing acknowledged is lost: every published event is in the
//     tenant's chain;
//   - no event is emitted twice: every device event id is in the tenant's
//     chain exactly once, despite redeliveries of messages whose emit was
//     durable before the kill;
//   - the chain is intact (engine.VerifyChain).
//
// After each kill a few messages are published while no ingest process is
// up (the broker queues them in the session); publishing pauses only while
// the restarted process connects, because mochi v2.7.9 loses QoS 1
// messages routed to a session during its takeover: inheritClientSession
// clones the old client's inflight messages, and whatever is routed to the
// old client after the clone, until the new one is registered, is cleared
// with it. That is the local broker's race, not ingest's.
func TestIngestSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: kills and restarts ingest processes")
	}
	e := newEnv(t)
	tenant := uniq("t")
	things := []string{uniq("bowl"), uniq("bowl"), uniq("bowl")}
	for _, th := range things {
		e.register(t, th, tenant)
	}
	clientID, group := uniq("crash-ingest"), uniq("g")
	var stderr syncBuffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("ingest children stderr:\n%s", stderr.String())
		}
	})

	// The stream: per thing, device events with distinct ids and seqs,
	// the things interleaved.
	const msgs = 40
	type message struct {
		topic   string
		payload map[string]any
	}
	var stream []message
	var eventIDs []string
	for i := range msgs {
		for _, th := range things {
			id := fmt.Sprintf("empty-%d", i+1)
			eventIDs = append(eventIDs, ingest.IdempotencyKey(th, id))
			stream = append(stream, message{topic(tenant, th, "events"), event(th, uint64(i+1), id, "bowl.empty", map[string]any{})})
		}
	}

	// Kill points: distinct random positions in the stream, spread over it.
	const kills, queuedWhileDown = 4, 5
	killAt := make([]int, 0, kills)
	for k := range kills {
		lo, hi := len(stream)*(k+1)/(kills+2), len(stream)*(k+2)/(kills+2)
		killAt = append(killAt, lo+rand.IntN(hi-lo))
	}
	t.Logf("%d messages; SIGKILL after %v published", len(stream), killAt)

	proc := startIngestProc(t, clientID, group, &stderr)
	pub := e.publisher(t)
	var published atomic.Int64
	var takeover sync.RWMutex // held while a restarted child connects
	pubDone := make(chan error, 1)
	go func() {
		for _, m := range stream {
			takeover.RLock()
			tok := pub.Publish(m.topic, 1, false, mustJSON(m.payload))
			ok := tok.WaitTimeout(hangGuard)
			takeover.RUnlock()
			if !ok || tok.Error() != nil {
				pubDone <- fmt.Errorf("publish %s: %v", m.topic, tok.Error())
				return
			}
			published.Add(1)
			time.Sleep(3 * time.Millisecond) // pace the stream so kills land mid-stream
		}
		pubDone <- nil
	}()

	deadline := time.Now().Add(hangGuard)
	waitPublished := func(n int) {
		t.Helper()
		for published.Load() < int64(min(n, len(stream))) {
			if time.Now().After(deadline) {
				t.Fatalf("publisher stuck at %d of %d messages", published.Load(), len(stream))
			}
			time.Sleep(time.Millisecond)
		}
	}
	for k, n := range killAt {
		waitPublished(n)
		proc.kill()
		if !killedBySIGKILL(proc.err) {
			t.Fatalf("ingest child %d ended with %v; want killed by SIGKILL", k+1, proc.err)
		}
		waitPublished(n + queuedWhileDown) // the broker queues these in the session
		takeover.Lock()
		proc = startIngestProc(t, clientID, group, &stderr)
		takeover.Unlock()
	}
	select {
	case err := <-pubDone:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(hangGuard):
		t.Fatal("publisher never finished")
	}

	// Let the last ingest process work until every event is in.
	missing := func() (events []string) {
		count := eventCounts(t, e, tenant)
		for _, id := range eventIDs {
			if count[id] == 0 {
				events = append(events, id)
			}
		}
		return events
	}
	for {
		evs := missing()
		if len(evs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s still missing %d events (%v)", hangGuard, len(evs), evs)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Stop the last process gracefully, then check exactly-once and the chain.
	_ = proc.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-proc.exited:
		if proc.err != nil {
			t.Errorf("last ingest child after SIGTERM: %v; want a clean exit", proc.err)
		}
	case <-time.After(hangGuard):
		t.Fatal("last ingest child did not stop on SIGTERM")
	}
	count := eventCounts(t, e, tenant)
	for _, id := range eventIDs {
		if count[id] != 1 {
			t.Errorf("event %s is in the chain %d times; want 1", id, count[id])
		}
	}
	for id, n := range count {
		if !slices.Contains(eventIDs, id) {
			t.Errorf("unexpected event %s (%d times) in the chain", id, n)
		}
	}
	rep, err := engine.NewVerifier(e.ddb, lstest.Names(t).EventsTable(), 0).VerifyChain(context.Background(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Intact || rep.Events != len(eventIDs) {
		t.Errorf("chain of %s: intact %v, %d events (%s at %d: %s); want intact with %d", tenant, rep.Intact, rep.Events, rep.Reason, rep.FirstBadSeq, rep.Detail, len(eventIDs))
	}
}

// eventCounts counts the tenant's events by "<thing>/<device event id>";
// other event types (bowl.data_gap has no device event id) are counted
// under their type.
func eventCounts(t *testing.T, e env, tenant string) map[string]int {
	t.Helper()
	count := map[string]int{}
	for _, ev := range e.events(t, tenant) {
		id, _ := ev.Payload["device_event_id"].(string)
		th, _ := ev.Payload["thing"].(string)
		if id == "" {
			count[ev.Type]++
			continue
		}
		count[ingest.IdempotencyKey(th, id)]++
	}
	return count
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func killedBySIGKILL(err error) bool {
	ee, ok := err.(*exec.ExitError)
	if !ok {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}
