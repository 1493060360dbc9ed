package inbox_test

import (
	"fmt"

	"github.com/bowline-iot/bowline/engine/inbox"
)

// Each (event, subscription) has its own inbox row.
func ExampleKey() {
	fmt.Println(inbox.Key("01J9ZK3V8Q", "book_shipment"))
	// Output: IDEMP#01J9ZK3V8Q:book_shipment
}
