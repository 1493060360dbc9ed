package engine_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/resources"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// Environment of a re-executed emitter process.
const (
	childEnv        = "BOWLINE_ENGINE_TEST_EMITTER" // tenant to emit for
	childCountEnv   = "BOWLINE_ENGINE_TEST_COUNT"
	childWorkersEnv = "BOWLINE_ENGINE_TEST_WORKERS"
)

type emitResult struct {
	ID  string `json:"id,omitempty"`
	Seq uint64 `json:"seq,omitempty"`
	Err string `json:"err,omitempty"`
}

// TestManyProcessesOneTenant runs 8 OS processes with 4 goroutines each (32
// emitters) emitting 2,000 events for one tenant, and checks that the log
// holds seq 1..2000 exactly once, each the event one emitter was told it
// committed, and that the chain verifies.
func TestManyProcessesOneTenant(t *testing.T) {
	const procs, workers, total = 8, 4, 2000
	f := newFixture(t, testCatalog(), nil)
	tenant := newTenant(t)

	var (
		mu      sync.Mutex
		results []emitResult
		wg      sync.WaitGroup
	)
	ctx := testkit.Context(t)
	for p := 0; p < procs; p++ {
		count := total / procs
		cmd := testkit.TestBinary("-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+tenant, childCountEnv+"="+strconv.Itoa(count), childWorkersEnv+"="+strconv.Itoa(workers))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		child := testkit.StartChild(t, fmt.Sprintf("emitter %d", p), cmd)
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := child.Wait(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("emitter %d: %v\n%s", p, err, stderr.String())
			}
			sc := bufio.NewScanner(&stdout)
			for sc.Scan() {
				var r emitResult
				if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
					t.Errorf("emitter %d wrote %q: %v", p, sc.Text(), err)
					continue
				}
				results = append(results, r)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if len(results) != total {
		t.Fatalf("emitters reported %d results; want %d", len(results), total)
	}
	committed := map[string]uint64{}
	failed := 0
	for _, r := range results {
		if r.Err != "" {
			failed++
			t.Logf("emit failed: %s", r.Err)
			continue
		}
		committed[r.ID] = r.Seq
	}
	log := f.events(t, tenant)
	if len(log) != len(committed) {
		t.Errorf("log holds %d events; emitters were told %d committed (%d failed)", len(log), len(committed), failed)
	}
	for i, env := range log {
		if env.Seq != uint64(i+1) {
			t.Fatalf("log position %d holds seq %d; want %d (gap or repeat)", i, env.Seq, i+1)
		}
		if seq, ok := committed[env.ID]; !ok || seq != env.Seq {
			t.Errorf("log seq %d is event %s; its emitter reported seq %d, committed=%v", env.Seq, env.ID, seq, ok)
		}
	}
	if failed > 0 {
		t.Errorf("%d emits failed; want 0 (conflicts retry until the deadline)", failed)
	}
	rep := f.verify(t, tenant)
	if !rep.Intact || rep.Events != len(committed) || rep.HeadSeq != uint64(len(committed)) {
		t.Errorf("VerifyChain = %+v; want intact with %d events", rep, len(committed))
	}
	t.Logf("%d events from %d processes, %d failed; chain intact", len(log), procs, failed)
}

// runEmitterChild is the body of a re-executed emitter process.
func runEmitterChild() int {
	tenant := os.Getenv(childEnv)
	count, _ := strconv.Atoi(os.Getenv(childCountEnv))
	workers, _ := strconv.Atoi(os.Getenv(childWorkersEnv))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // hang guard
	defer cancel()
	cfg, err := awsenv.Load(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	names, err := resources.FromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	e, err := engine.New(engine.Config{
		Client:      dynamodb.NewFromConfig(cfg, quietLocal),
		EventsTable: names.EventsTable(),
		InboxTable:  names.InboxTable(),
		Catalog:     testCatalog(),
		// Generous: 8 processes contend on one head on a 2-core machine.
		DefaultTimeout: 3 * time.Minute,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var (
		mu  sync.Mutex
		out = json.NewEncoder(os.Stdout)
		wg  sync.WaitGroup
	)
	ctx = engine.WithActor(engine.WithTenant(ctx, tenant), "pid-"+strconv.Itoa(os.Getpid()))
	for w := 0; w < workers; w++ {
		n := count / workers
		if w < count%workers {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				env, err := e.Emit(ctx, "bowl.meal_finished", map[string]any{"worker": w, "i": i})
				r := emitResult{ID: env.ID, Seq: env.Seq}
				if err != nil {
					r = emitResult{Err: err.Error()}
				}
				mu.Lock()
				_ = out.Encode(r)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return 0
}
