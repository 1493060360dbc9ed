package inbox

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
)

func TestMain(m *testing.M) { lstest.Main(m, localstack.DynamoDB) }

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newStore(t *testing.T, c *clock) *Store {
	t.Helper()
	cfg := lstest.AWSConfig(t)
	s, err := New(Config{Client: dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions), Table: lstest.Names(t).InboxTable(), Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestKey(t *testing.T) {
	if got, want := Key("01EV", "book_shipment"), "IDEMP#01EV:book_shipment"; got != want {
		t.Errorf("Key = %q; want %q", got, want)
	}
	if ev, sub, ok := SplitKey(Key("01EV", "book_shipment")); !ok || ev != "01EV" || sub != "book_shipment" {
		t.Errorf("SplitKey(Key) = %q, %q, %v; want 01EV, book_shipment, true", ev, sub, ok)
	}
	if _, _, ok := SplitKey("EMIT#x:y"); ok {
		t.Error("SplitKey of another prefix: ok; want false")
	}
}

func TestClaimCompleteIsFinal(t *testing.T) {
	ctx := ctxT(t)
	c := &clock{t: time.Now()}
	s := newStore(t, c)
	ev := ulid.Make().String()
	cl, err := s.Claim(ctx, ev, "sub", "w1", time.Minute)
	if err != nil {
		t.Fatalf("first Claim: %v", err)
	}
	if cl.Attempts != 1 {
		t.Errorf("first Claim attempts = %d; want 1", cl.Attempts)
	}
	if _, err := s.Claim(ctx, ev, "sub", "w2", time.Minute); !errors.Is(err, ErrHeld) {
		t.Errorf("Claim of a live lease = %v; want ErrHeld", err)
	}
	if err := s.Complete(ctx, cl); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	c.Add(time.Hour)
	if _, err := s.Claim(ctx, ev, "sub", "w2", time.Minute); !errors.Is(err, ErrCompleted) {
		t.Errorf("Claim after Complete = %v; want ErrCompleted", err)
	}
	if err := s.ReleaseDead(ctx, ev, "sub"); !errors.Is(err, ErrNotDead) {
		t.Errorf("ReleaseDead of a completed row = %v; want ErrNotDead", err)
	}
	row, ok, err := s.Get(ctx, ev, "sub")
	if err != nil || !ok || row.Status != Completed || row.Worker != "w1" {
		t.Errorf("Get = %+v, %v, %v; want completed by w1", row, ok, err)
	}
}

// TestRetryableReleaseAllowsReclaim: a released claim is claimable at once
// by the next receive, and attempts count up.
func TestRetryableReleaseAllowsReclaim(t *testing.T) {
	ctx := ctxT(t)
	c := &clock{t: time.Now()}
	s := newStore(t, c)
	ev := ulid.Make().String()
	cl, err := s.Claim(ctx, ev, "sub", "w1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, cl, errors.New("shopify 503")); err != nil {
		t.Fatalf("Release: %v", err)
	}
	c.Add(time.Millisecond)
	cl2, err := s.Claim(ctx, ev, "sub", "w2", time.Minute)
	if err != nil {
		t.Fatalf("Claim after Release: %v", err)
	}
	if cl2.Attempts != 2 {
		t.Errorf("attempts after second claim = %d; want 2", cl2.Attempts)
	}
	if err := s.Complete(ctx, cl); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("Complete with the released claim = %v; want ErrLeaseLost", err)
	}
	row, _, _ := s.Get(ctx, ev, "sub")
	if row.LastError != "shopify 503" || row.Status != Pending {
		t.Errorf("row after release and reclaim = %+v; want pending with last_error", row)
	}
}

// TestDeadNeedsOperatorRelease: a dead row refuses claims until redrive
// releases it; then it can be claimed and completed.
func TestDeadNeedsOperatorRelease(t *testing.T) {
	ctx := ctxT(t)
	c := &clock{t: time.Now()}
	s := newStore(t, c)
	ev := ulid.Make().String()
	cl, err := s.Claim(ctx, ev, "sub", "w1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.MarkDead(ctx, cl, errors.New("card declined")); err != nil {
		t.Fatalf("MarkDead: %v", err)
	}
	c.Add(time.Hour)
	if _, err := s.Claim(ctx, ev, "sub", "w2", time.Minute); !errors.Is(err, ErrDead) {
		t.Errorf("Claim of a dead row = %v; want ErrDead", err)
	}
	if err := s.ReleaseDead(ctx, ev, "sub"); err != nil {
		t.Fatalf("ReleaseDead: %v", err)
	}
	cl2, err := s.Claim(ctx, ev, "sub", "w2", time.Minute)
	if err != nil {
		t.Fatalf("Claim of a released dead row: %v", err)
	}
	if err := s.Complete(ctx, cl2); err != nil {
		t.Fatalf("Complete after replay: %v", err)
	}
	if err := s.ReleaseDead(ctx, "absent-"+ev, "sub"); !errors.Is(err, ErrNotDead) {
		t.Errorf("ReleaseDead of an absent row = %v; want ErrNotDead", err)
	}
}

// TestLeaseTakeover: worker A's lease expires while it hangs; worker B
// claims and completes; A's late completion (or dead-marking, or heartbeat)
// does not overwrite B's record.
func TestLeaseTakeover(t *testing.T) {
	ctx := ctxT(t)
	c := &clock{t: time.Now()}
	s := newStore(t, c)
	ev := ulid.Make().String()
	a, err := s.Claim(ctx, ev, "sub", "worker-a", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Extend(ctx, a, 2*time.Second); err != nil {
		t.Fatalf("Extend while holding: %v", err)
	}
	c.Add(3 * time.Second) // A hangs past its lease
	b, err := s.Claim(ctx, ev, "sub", "worker-b", time.Minute)
	if err != nil {
		t.Fatalf("Claim by B after A's lease expired: %v", err)
	}
	if err := s.Complete(ctx, b); err != nil {
		t.Fatalf("Complete by B: %v", err)
	}
	if err := s.Complete(ctx, a); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("late Complete by A = %v; want ErrLeaseLost", err)
	}
	if err := s.MarkDead(ctx, a, errors.New("late")); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("late MarkDead by A = %v; want ErrLeaseLost", err)
	}
	if _, err := s.Extend(ctx, a, time.Minute); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("late Extend by A = %v; want ErrLeaseLost", err)
	}
	row, _, err := s.Get(ctx, ev, "sub")
	if err != nil || row.Status != Completed || row.Worker != "worker-b" || row.Attempts != 2 {
		t.Errorf("row = %+v, %v; want completed by worker-b after 2 attempts", row, err)
	}
}

// TestConcurrentClaimsOneWinner: many workers race for one absent row; one
// wins.
func TestConcurrentClaimsOneWinner(t *testing.T) {
	ctx := ctxT(t)
	s := newStore(t, &clock{t: time.Now()})
	ev := ulid.Make().String()
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Claim(ctx, ev, "sub", "w"+string(rune('0'+i)), time.Minute)
			if err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			} else if !errors.Is(err, ErrHeld) {
				t.Errorf("Claim: %v; want nil or ErrHeld", err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Errorf("winners = %d; want 1", wins)
	}
}
