package frame

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func TestRoundTripEveryType(t *testing.T) {
	seen := map[Type]bool{}
	for _, tc := range sampleFrames {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := Marshal(tc.f)
			if err != nil {
				t.Fatalf("Marshal(%s) error %v; want nil", tc.name, err)
			}
			got, err := Unmarshal(raw)
			if err != nil {
				t.Fatalf("Unmarshal(% x) error %v; want nil", raw, err)
			}
			if !reflect.DeepEqual(got, tc.f) {
				t.Fatalf("Unmarshal(Marshal(f)) = %+v; want %+v", got, tc.f)
			}
			enc, err := Encode(tc.f)
			if err != nil {
				t.Fatalf("Encode(%s) error %v", tc.name, err)
			}
			if i := bytes.IndexByte(enc, 0); i != len(enc)-1 {
				t.Fatalf("Encode(%s) has 0x00 at %d of %d; want only the final delimiter", tc.name, i, len(enc))
			}
			dec := NewDecoder(bytes.NewReader(enc))
			df, err := dec.Next()
			if err != nil || !reflect.DeepEqual(df, tc.f) {
				t.Fatalf("Decoder.Next() = %+v, %v; want %+v, nil", df, err, tc.f)
			}
		})
		seen[tc.f.Type()] = true
	}
	for typ := range typeNames {
		if !seen[typ] {
			t.Errorf("no round-trip fixture for type %s", typ)
		}
	}
}

func TestMarshalRejectsInvalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    Frame
	}{
		{"no_body", Frame{}},
		{"empty_batch", Frame{Body: WeightBatch{RateHz: 50}}},
		{"batch_too_long", Frame{Body: WeightBatch{RateHz: 50, Milligrams: make([]int32, MaxSamples+1)}}},
		{"rate_zero", Frame{Body: WeightBatch{RateHz: 0, Milligrams: []int32{1}}}},
		{"device_id_space", Frame{Body: Hello{DeviceID: "bowl 1", SampleRateHz: 50}}},
		{"device_id_long", Frame{Body: Hello{DeviceID: string(make([]byte, MaxDeviceID+1)), SampleRateHz: 50}}},
		{"hello_reserved_caps", Frame{Body: Hello{DeviceID: "b", Capabilities: 0x8000, SampleRateHz: 50}}},
		{"tag_empty", Frame{Body: TagSeen{}}},
		{"lid_unknown", Frame{Body: Lid{State: 3}}},
		{"battery_percent", Frame{Body: Battery{Percent: 101}}},
		{"fault_detail_long", Frame{Body: Fault{Detail: string(bytes.Repeat([]byte("x"), MaxDetail+1))}}},
		{"fault_detail_utf8", Frame{Body: Fault{Detail: "\xff"}}},
		{"set_rate_high", Frame{Body: SetRate{RateHz: 1001}}},
	} {
		if _, err := Marshal(tc.f); !errors.Is(err, ErrInvalid) {
			t.Errorf("Marshal(%s) error %v; want ErrInvalid", tc.name, err)
		}
	}
}

func TestUnmarshalErrors(t *testing.T) {
	for _, tc := range invalidFrames() {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.wire[:len(tc.wire)-1]
			var raw [MaxRaw]byte
			n, err := decodeCOBS(raw[:], w)
			if err == nil {
				_, err = Unmarshal(raw[:n])
			}
			r, ok := ReasonOf(err)
			if !ok || r != tc.reason {
				t.Fatalf("decode(% x) error %v (reason %v); want reason %v", tc.wire, err, r, tc.reason)
			}
		})
	}
}

func TestCOBS(t *testing.T) {
	block := func(n int, from byte) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = from + byte(i)
		}
		return b
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	// Cases from the COBS paper and its common test set.
	for _, tc := range []struct {
		name     string
		raw, enc []byte
	}{
		{"empty", []byte{}, []byte{0x01}},
		{"zero", []byte{0x00}, []byte{0x01, 0x01}},
		{"two_zeros", []byte{0x00, 0x00}, []byte{0x01, 0x01, 0x01}},
		{"mixed", []byte{0x11, 0x22, 0x00, 0x33}, []byte{0x03, 0x11, 0x22, 0x02, 0x33}},
		{"trailing_zero", []byte{0x11, 0x00}, []byte{0x02, 0x11, 0x01}},
		{"254_nonzero", block(254, 1), cat([]byte{0xFF}, block(254, 1))},
		{"zero_then_254", cat([]byte{0}, block(254, 1)), cat([]byte{0x01, 0xFF}, block(254, 1))},
		{"255_nonzero", block(255, 1), cat([]byte{0xFF}, block(254, 1), []byte{0x02, 0xFF})},
	} {
		got := appendCOBS(nil, tc.raw)
		if !bytes.Equal(got, tc.enc) {
			t.Errorf("appendCOBS(%s) = % x; want % x", tc.name, got, tc.enc)
		}
		dst := make([]byte, 300)
		n, err := decodeCOBS(dst, tc.enc)
		if err != nil || !bytes.Equal(dst[:n], tc.raw) {
			t.Errorf("decodeCOBS(%s) = % x, %v; want % x", tc.name, dst[:n], err, tc.raw)
		}
	}
}
