package relay_test

import (
	"encoding/json"
	"fmt"

	"github.com/bowline-iot/bowline/engine/relay"
)

// The events pipe keeps INSERT records of event rows and forwards the raw
// NewImage, grouped by tenant and deduplicated by event id.
func ExamplePipe_Transform() {
	p, err := relay.Compile(relay.EventsPipe)
	if err != nil {
		panic(err)
	}
	var rec map[string]any
	_ = json.Unmarshal([]byte(`{"eventID":"r1","eventName":"INSERT","dynamodb":{"SequenceNumber":"7",
		"NewImage":{"pk":{"S":"TENANT#t1#EVENT"},"id":{"S":"01EV"},"tenant":{"S":"t1"}}}}`), &rec)
	msg, ok, err := p.Transform(rec)
	fmt.Println(ok, err)
	fmt.Println(msg.Body)
	fmt.Println(msg.GroupID, msg.DedupID)
	fmt.Println(relay.EventsPipe.InputTemplate())
	// Output:
	// true <nil>
	// {"id":{"S":"01EV"},"pk":{"S":"TENANT#t1#EVENT"},"tenant":{"S":"t1"}}
	// t1 01EV
	// <$.dynamodb.NewImage>
}
