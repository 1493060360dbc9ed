package frame

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
	"testing/iotest"
)

// TestDecoderResynchronises interleaves every invalid vector with valid
// frames and reads the stream in 1-byte and in whole chunks: every valid
// frame comes out, in order, and every invalid one is counted by reason.
func TestDecoderResynchronises(t *testing.T) {
	var stream []byte
	var want []Frame
	var wantDropped [numReasons]uint64
	stream = append(stream, 0x00, 0x37, 0x42) // line noise before the first delimiter
	wantDropped[ReasonCOBS]++                 // "37 42" is bad COBS
	inv := invalidFrames()
	for i, tc := range sampleFrames {
		enc, err := Encode(tc.f)
		if err != nil {
			t.Fatal(err)
		}
		stream = append(stream, 0x00) // harmless empty frame
		stream = append(stream, enc...)
		want = append(want, tc.f)
		if i < len(inv) {
			stream = append(stream, inv[i].wire...)
			wantDropped[inv[i].reason]++
		}
	}
	// A frame cut short by the end of the stream is discarded silently.
	stream = append(stream, 0x05, 0x01)

	for name, r := range map[string]func() io.Reader{
		"one_byte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(stream)) },
		"whole":    func() io.Reader { return bytes.NewReader(stream) },
		"half":     func() io.Reader { return iotest.HalfReader(bytes.NewReader(stream)) },
	} {
		t.Run(name, func(t *testing.T) {
			d := NewDecoder(r())
			var got []Frame
			for {
				f, err := d.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("Next() error %v; want frames then io.EOF", err)
				}
				got = append(got, f)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("decoded %d frames; want %d, in order:\n got %+v\nwant %+v", len(got), len(want), got, want)
			}
			st := d.Stats()
			if st.Dropped != wantDropped {
				t.Errorf("Stats().Dropped = %v; want %v", st.Dropped, wantDropped)
			}
			if st.Frames != uint64(len(want)) || st.Bytes != uint64(len(stream)) {
				t.Errorf("Stats() frames %d bytes %d; want %d, %d", st.Frames, st.Bytes, len(want), len(stream))
			}
		})
	}
}

// TestDecoderBoundedOnEndlessGarbage feeds megabytes without a delimiter:
// the decoder drops it as one oversize frame and recovers.
func TestDecoderBoundedOnEndlessGarbage(t *testing.T) {
	garbage := bytes.Repeat([]byte{0xA5}, 4<<20)
	good, _ := Encode(sampleFrames[1].f)
	stream := append(append(garbage, 0x00), good...)
	d := NewDecoder(bytes.NewReader(stream))
	f, err := d.Next()
	if err != nil || !reflect.DeepEqual(f, sampleFrames[1].f) {
		t.Fatalf("Next() after garbage = %+v, %v; want %+v", f, err, sampleFrames[1].f)
	}
	if got := d.Stats().Dropped[ReasonOversize]; got != 1 {
		t.Fatalf("oversize drops = %d; want 1", got)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func TestDecoderReturnsReaderError(t *testing.T) {
	boom := errors.New("boom")
	if _, err := NewDecoder(errReader{boom}).Next(); !errors.Is(err, boom) {
		t.Fatalf("Next() error %v; want %v", err, boom)
	}
}
