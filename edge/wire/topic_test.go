package wire

import (
	"errors"
	"testing"
)

func TestParseTopic(t *testing.T) {
	for _, c := range []struct {
		topic string
		want  Topic
		err   error // nil, ErrBadTopic or ErrInvalidName (which implies ErrBadTopic)
	}{
		{"dt/bowline/t1/bowl-1/telemetry", Topic{"t1", "bowl-1", KindTelemetry}, nil},
		{"dt/bowline/t1/bowl:1/events", Topic{"t1", "bowl:1", KindEvents}, nil},
		{"dt/bowline/t1/gw-1/status", Topic{"t1", "gw-1", KindStatus}, nil},
		{"dt/bowline/t1/bowl-1/other", Topic{}, ErrBadTopic},
		{"dt/bowline/t1/bowl-1", Topic{}, ErrBadTopic},
		{"dt/other/t1/bowl-1/events", Topic{}, ErrBadTopic},
		{"dt/bowline/t#1/bowl-1/events", Topic{}, ErrInvalidName},
		{"dt/bowline/_acme/bowl-1/events", Topic{}, ErrInvalidName},
		{"dt/bowline/t1//events", Topic{}, ErrInvalidName},
		{"dt/bowline/t1/a/b/events", Topic{}, ErrBadTopic},
		{"", Topic{}, ErrBadTopic},
	} {
		got, err := ParseTopic(c.topic)
		if got != c.want || (c.err == nil) != (err == nil) || (err != nil && (!errors.Is(err, c.err) || !errors.Is(err, ErrBadTopic))) {
			t.Errorf("ParseTopic(%q) = %+v, %v; want %+v, %v", c.topic, got, err, c.want, c.err)
		}
	}
}

func TestFilter(t *testing.T) {
	if got, want := Filter(KindEvents), "dt/bowline/+/+/events"; got != want {
		t.Errorf("Filter(events) = %q; want %q", got, want)
	}
}

// FuzzParseTopic: whatever parses is printed back as the same topic, and
// its names are valid.
func FuzzParseTopic(f *testing.F) {
	for _, m := range loadGolden(f).Messages {
		f.Add(m.Topic)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tp, err := ParseTopic(s)
		if err != nil {
			return
		}
		if tp.String() != s {
			t.Fatalf("ParseTopic(%q).String() = %q; want the input", s, tp.String())
		}
		if !ValidName(tp.Tenant) || !ValidName(tp.Thing) {
			t.Fatalf("ParseTopic(%q) = %+v with an invalid name", s, tp)
		}
	})
}
