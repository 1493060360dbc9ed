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
		"Keys":{"pk":{"S":"TENANT#t1#EVENT"}},"NewImage":{"pk":{"S":"TENANT#t1#EVENT"},"id":{"S":"01EV"},"tenant":{"S":"t1"}}}}`), &rec)
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

// A pipe narrowed to the types someone subscribes to: the composition root
// passes engine.Catalog.SubscribedTypes; events of other types are not
// queued.
func ExamplePipeSpec_ForTypes() {
	spec, err := relay.EventsPipe.ForTypes([]string{"order.paid"})
	if err != nil {
		panic(err)
	}
	fmt.Println(spec.Filters[0])
	p, err := relay.Compile(spec)
	if err != nil {
		panic(err)
	}
	for _, typ := range []string{"order.paid", "order.viewed"} {
		var rec map[string]any
		_ = json.Unmarshal([]byte(`{"eventName":"INSERT","dynamodb":{"Keys":{"pk":{"S":"TENANT#t1#EVENT"}},"NewImage":{"pk":{"S":"TENANT#t1#EVENT"},
			"id":{"S":"01EV"},"tenant":{"S":"t1"},"type":{"S":"`+typ+`"}}}}`), &rec)
		_, ok, _ := p.Transform(rec)
		fmt.Println(typ, ok)
	}
	// Output:
	// {"dynamodb":{"Keys":{"pk":{"S":[{"prefix":"TENANT#"}]}},"NewImage":{"pk":{"S":[{"suffix":"#EVENT"}]},"type":{"S":["order.paid"]}}},"eventName":["INSERT"]}
	// order.paid true
	// order.viewed false
}
