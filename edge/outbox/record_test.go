package outbox

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func TestRecordFormatFixtures(t *testing.T) {
	at := time.Unix(0, 0x0102030405060708).UTC()
	tests := []struct {
		name  string
		entry Entry
		age   time.Duration
		raw   []byte
		v1    bool // format 1 (before the age clock): decode only
	}{
		{
			name:  "telemetry sample, format 2",
			entry: Entry{At: at, Type: "w", Value: 1.0},
			age:   0x1122334455,
			raw: []byte{
				2,
				1, 2, 3, 4, 5, 6, 7, 8,
				0, 0, 0, 0x11, 0x22, 0x33, 0x44, 0x55,
				0x3f, 0xf0, 0, 0, 0, 0, 0, 0,
				1, 'w',
				0,
			},
		},
		{
			name:  "event with id and data, format 2",
			entry: Entry{At: at, Type: "e", ID: "m1", Data: []byte(`{}`)},
			raw: []byte{
				2,
				1, 2, 3, 4, 5, 6, 7, 8,
				0, 0, 0, 0, 0, 0, 0, 0,
				0, 0, 0, 0, 0, 0, 0, 0,
				1, 'e',
				2, 'm', '1',
				'{', '}',
			},
		},
		{
			name:  "telemetry sample, format 1",
			entry: Entry{At: at, Type: "w", Value: 1.0},
			v1:    true,
			raw: []byte{
				1,
				1, 2, 3, 4, 5, 6, 7, 8,
				0x3f, 0xf0, 0, 0, 0, 0, 0, 0,
				1, 'w',
				0,
			},
		},
		{
			name:  "event with id and data, format 1",
			entry: Entry{At: at, Type: "e", ID: "m1", Data: []byte(`{}`)},
			v1:    true,
			raw: []byte{
				1,
				1, 2, 3, 4, 5, 6, 7, 8,
				0, 0, 0, 0, 0, 0, 0, 0,
				1, 'e',
				2, 'm', '1',
				'{', '}',
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := encodeValueAt(tt.entry, tt.age); !tt.v1 && !bytes.Equal(got, tt.raw) {
				t.Fatalf("encodeValueAt = %v; want %v", got, tt.raw)
			}
			back, age, err := decodeValueAge(tt.raw)
			if err != nil {
				t.Fatalf("decodeValueAge: %v", err)
			}
			if age != tt.age {
				t.Fatalf("decodeValueAge age = %v; want %v", age, tt.age)
			}
			if !back.At.Equal(tt.entry.At) || back.Type != tt.entry.Type || back.ID != tt.entry.ID || back.Value != tt.entry.Value || !bytes.Equal(back.Data, tt.entry.Data) {
				t.Fatalf("decodeValue = %+v; want %+v", back, tt.entry)
			}
		})
	}
}

func TestRecordFormatErrors(t *testing.T) {
	tests := []struct {
		name string
		raw  []byte
		want error
	}{
		{"empty", nil, ErrFormat},
		{"future format", []byte{3, 0, 0}, ErrFormat},
		{"short", []byte{1, 0, 0, 0}, ErrCorrupt},
		{"short format 2", append([]byte{2}, make([]byte, 20)...), ErrCorrupt},
		{"type overruns", append(append([]byte{1}, make([]byte, 16)...), 9, 'a'), ErrCorrupt},
		{"id overruns", append(append([]byte{1}, make([]byte, 16)...), 1, 'a', 5), ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeValue(tt.raw)
			if !errors.Is(err, tt.want) {
				t.Fatalf("decodeValue(%v) error = %v; want %v", tt.raw, err, tt.want)
			}
		})
	}
}

func FuzzDecodeValue(f *testing.F) {
	f.Add(encodeValue(Entry{Type: "weight_g", Value: 3}))
	f.Add(encodeValue(Entry{Type: "bowl.empty", ID: "x", Data: []byte(`{"a":1}`)}))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeValue(b)
		if err != nil {
			return
		}
		again, err := decodeValue(encodeValue(e))
		if err != nil || again.Type != e.Type || again.ID != e.ID || !bytes.Equal(again.Data, e.Data) {
			t.Fatalf("round trip of %v: %+v, %v", b, again, err)
		}
	})
}
