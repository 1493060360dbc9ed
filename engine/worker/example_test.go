package worker_test

import (
	"errors"
	"fmt"

	"github.com/bowline-iot/bowline/engine/worker"
)

// A handler marks an error that retrying cannot fix as terminal; the worker
// then dead-letters the subscription at once instead of waiting for the
// queue's remaining receives.
func ExampleTerminal() {
	err := worker.Terminal(errors.New("order o1 does not exist"))
	fmt.Println(errors.Is(err, worker.ErrTerminal))
	fmt.Println(err)
	// Output:
	// true
	// terminal: order o1 does not exist
}
