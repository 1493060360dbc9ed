package inbox

import (
	"errors"
	"fmt"
	"time"
)

// Why a claim or a state change was refused.
var (
	// ErrCompleted: the subscription already completed for this event.
	ErrCompleted = errors.New("already completed")
	// ErrDead: the row is dead and no operator has released it.
	ErrDead = errors.New("dead and not released")
	// ErrHeld: another worker holds an unexpired lease.
	ErrHeld = errors.New("held by another worker")
	// ErrLeaseLost: the claim's token no longer owns the row (its lease was
	// taken over, or the row changed state).
	ErrLeaseLost = errors.New("lease lost")
	// ErrNotDead: ReleaseDead found no dead row.
	ErrNotDead = errors.New("not dead")
)

// ClaimError says why Claim was refused. It matches ErrCompleted, ErrDead or
// ErrHeld.
type ClaimError struct {
	Key          string
	Status       Status
	Worker       string
	LeaseExpires time.Time
	Err          error
}

func (e *ClaimError) Error() string {
	if e.Err == ErrHeld {
		return fmt.Sprintf("claim %s: %v (%s until %s)", e.Key, e.Err, e.Worker, e.LeaseExpires.UTC().Format(time.RFC3339Nano))
	}
	return fmt.Sprintf("claim %s: %v", e.Key, e.Err)
}

func (e *ClaimError) Unwrap() error { return e.Err }
