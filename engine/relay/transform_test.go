package relay

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

const eventImage = `{"id":{"S":"01J0EV"},"payload":{"M":{"grams":{"N":"12"}}},"pk":{"S":"TENANT#t1#EVENT"},"sk":{"S":"00000000000000000001"},"tenant":{"S":"t1"},"type":{"S":"bowl.refilled"}}`

func record(t *testing.T, eventName, newImage string) map[string]any {
	t.Helper()
	raw := `{"eventID":"e1","eventName":"` + eventName + `","eventSource":"aws:dynamodb","dynamodb":{"SequenceNumber":"100","ApproximateCreationDateTime":1700000000`
	if newImage != "" {
		raw += `,"NewImage":` + newImage
		// A stream record's Keys are the image's key attributes.
		var img map[string]any
		if err := json.Unmarshal([]byte(newImage), &img); err != nil {
			t.Fatalf("fixture %s: %v", newImage, err)
		}
		keys, _ := json.Marshal(map[string]any{"pk": img["pk"]})
		raw += `,"Keys":` + string(keys)
	}
	raw += `}}`
	var v map[string]any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatalf("fixture %s: %v", raw, err)
	}
	return v
}

func TestEventsPipeTransform(t *testing.T) {
	p, err := Compile(EventsPipe)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		eventName string
		image     string
		wantOK    bool
		wantBody  string
		wantGroup string
		wantDedup string
		wantErr   error
	}{
		{"event insert", "INSERT", eventImage, true, eventImage, "t1", "01J0EV", nil},
		{"event modify is dropped", "MODIFY", eventImage, false, "", "", "", nil},
		{"head row is dropped", "INSERT", `{"last_seq":{"N":"1"},"pk":{"S":"TENANT#t1#HEAD"},"sk":{"S":"HEAD"}}`, false, "", "", "", nil},
		{"dedup row is dropped", "INSERT", `{"pk":{"S":"EMIT#thing#x"}}`, false, "", "", "", nil},
		{"remove is dropped", "REMOVE", "", false, "", "", "", nil},
		{"event without tenant is an error", "INSERT", `{"id":{"S":"x"},"pk":{"S":"TENANT#t1#EVENT"}}`, true, "", "", "", ErrUnresolved},
		{"event with numeric id is an error", "INSERT", `{"id":{"N":"1"},"pk":{"S":"TENANT#t1#EVENT"},"tenant":{"S":"t1"}}`, true, "", "", "", ErrUnresolved},
	} {
		msg, ok, err := p.Transform(record(t, c.eventName, c.image))
		if ok != c.wantOK || !errors.Is(err, c.wantErr) {
			t.Errorf("%s: Transform ok=%v err=%v; want ok=%v err=%v", c.name, ok, err, c.wantOK, c.wantErr)
			continue
		}
		if err != nil || !ok {
			continue
		}
		if msg.Body != c.wantBody || msg.GroupID != c.wantGroup || msg.DedupID != c.wantDedup {
			t.Errorf("%s: Transform = body %s group %q dedup %q; want body %s group %q dedup %q",
				c.name, msg.Body, msg.GroupID, msg.DedupID, c.wantBody, c.wantGroup, c.wantDedup)
		}
		if msg.Sequence != "100" || !msg.Created.Equal(time.Unix(1700000000, 0)) {
			t.Errorf("%s: Transform seq %q created %v; want 100 and 1700000000", c.name, msg.Sequence, msg.Created)
		}
	}
}

func TestRecordChangesPipeForwardsWholeRecord(t *testing.T) {
	p, err := Compile(RecordChangesPipe)
	if err != nil {
		t.Fatal(err)
	}
	rec := record(t, "REMOVE", "")
	msg, ok, err := p.Transform(rec)
	if err != nil || !ok {
		t.Fatalf("Transform(REMOVE) ok=%v err=%v; want ok", ok, err)
	}
	want := `{"dynamodb":{"ApproximateCreationDateTime":1700000000,"SequenceNumber":"100"},"eventID":"e1","eventName":"REMOVE","eventSource":"aws:dynamodb"}`
	if msg.Body != want || msg.GroupID != "" {
		t.Errorf("Transform body = %s group %q; want %s and no group", msg.Body, msg.GroupID, want)
	}
}

func TestPipeSpecTemplates(t *testing.T) {
	if got, want := EventsPipe.InputTemplate(), "<$.dynamodb.NewImage>"; got != want {
		t.Errorf("EventsPipe.InputTemplate() = %q; want %q", got, want)
	}
	if got := RecordChangesPipe.InputTemplate(); got != "" {
		t.Errorf("RecordChangesPipe.InputTemplate() = %q; want \"\"", got)
	}
	for _, bad := range []PipeSpec{
		{Name: "", BodyPath: "$"},
		{Name: "x", BodyPath: "dynamodb.NewImage"},
		{Name: "x", BodyPath: "$", GroupIDPath: "$.a"},
		{Name: "x", BodyPath: "$", Filters: []string{`{"a":[{"numeric":[">",1]}]}`}},
		{Name: "x", BodyPath: "$", Filters: []string{`{"a":"plain"}`}},
		{Name: "x", BodyPath: "$", Filters: []string{`{"a":[{"anything-but":{"prefix":"SEQ#"}}]}`}},
		{Name: "x", BodyPath: "$", Filters: []string{`{"$or":[{"a":["x"]},{"b":["y"]}]}`}},
		{Name: "x", BodyPath: "$", Filters: []string{`{}`, `{}`, `{}`, `{}`, `{}`, `{}`}},
		{Name: "x", BodyPath: "$", Filters: []string{`{"a":["` + strings.Repeat("x", MaxPatternLen) + `"]}`}},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil; want an error", bad)
		}
	}
}

func TestFilter(t *testing.T) {
	for _, c := range []struct {
		pattern string
		record  string
		want    bool
	}{
		{``, `{}`, true},
		{`{"a":["x"]}`, `{"a":"x"}`, true},
		{`{"a":["x","y"]}`, `{"a":"y"}`, true},
		{`{"a":["x"]}`, `{"a":"z"}`, false},
		{`{"a":["x"]}`, `{}`, false},
		{`{"a":[1]}`, `{"a":1}`, true},
		{`{"a":[true]}`, `{"a":false}`, false},
		{`{"a":[{"prefix":"TEN"}]}`, `{"a":"TENANT"}`, true},
		{`{"a":[{"suffix":"#EVENT"}]}`, `{"a":"TENANT#t#HEAD"}`, false},
		{`{"a":[{"exists":true}]}`, `{"a":"v"}`, true},
		{`{"a":[{"exists":false}]}`, `{"a":"v"}`, false},
		{`{"a":[{"exists":false}]}`, `{"b":"v"}`, true},
		{`{"a":[{"anything-but":["x"]}]}`, `{"a":"y"}`, true},
		{`{"a":[{"anything-but":"x"}]}`, `{"a":"x"}`, false},
		{`{"a":["x"]}`, `{"a":["q","x"]}`, true},
		{`{"a":{"b":{"c":["x"]}}}`, `{"a":{"b":{"c":"x"}}}`, true},
		{`{"a":{"b":["x"]}}`, `{"a":"notobject"}`, false},
		{`{"a":["x"],"b":["y"]}`, `{"a":"x","b":"n"}`, false},
		{`{"a":[{"equals-ignore-case":"contact"}]}`, `{"a":"Contact"}`, true},
		{`{"a":[{"equals-ignore-case":"contact"}]}`, `{"a":"contacts"}`, false},
		{`{"a":[{"prefix":{"equals-ignore-case":"contact#"}}]}`, `{"a":"CONTACT#t1"}`, true},
		{`{"a":[{"prefix":{"equals-ignore-case":"contact#"}}]}`, `{"a":"SEQ#bowl-1"}`, false},
		{`{"a":[{"prefix":{"equals-ignore-case":"contact#"}}]}`, `{"a":"c"}`, false},
	} {
		f, err := CompileFilter(c.pattern)
		if err != nil {
			t.Fatalf("CompileFilter(%s): %v", c.pattern, err)
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(c.record), &rec); err != nil {
			t.Fatal(err)
		}
		if got := f.Match(rec); got != c.want {
			t.Errorf("filter %s on %s = %v; want %v", c.pattern, c.record, got, c.want)
		}
	}
}

func TestRecordValueMatchesPipeShape(t *testing.T) {
	created := time.Unix(1700000000, 0)
	r := streamtypes.Record{
		EventID:   aws.String("e1"),
		EventName: streamtypes.OperationTypeInsert,
		Dynamodb: &streamtypes.StreamRecord{
			SequenceNumber:              aws.String("100"),
			ApproximateCreationDateTime: &created,
			Keys:                        map[string]streamtypes.AttributeValue{"pk": &streamtypes.AttributeValueMemberS{Value: "TENANT#t1#EVENT"}},
			NewImage: map[string]streamtypes.AttributeValue{
				"pk":     &streamtypes.AttributeValueMemberS{Value: "TENANT#t1#EVENT"},
				"id":     &streamtypes.AttributeValueMemberS{Value: "01J0EV"},
				"tenant": &streamtypes.AttributeValueMemberS{Value: "t1"},
			},
		},
	}
	v, err := RecordValue(r, "arn:stream")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := Compile(EventsPipe)
	msg, ok, err := p.Transform(v)
	if err != nil || !ok {
		t.Fatalf("Transform ok=%v err=%v; want ok", ok, err)
	}
	want := `{"id":{"S":"01J0EV"},"pk":{"S":"TENANT#t1#EVENT"},"tenant":{"S":"t1"}}`
	if msg.Body != want || msg.GroupID != "t1" || msg.DedupID != "01J0EV" {
		t.Errorf("Transform = %s %q %q; want %s t1 01J0EV", msg.Body, msg.GroupID, msg.DedupID, want)
	}
}
