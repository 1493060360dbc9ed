package deadletter_test

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bowline-iot/bowline/engine/deadletter"
)

func TestTextIsBoundedValidUTF8(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"short", "ok", 10, "ok"},
		{"invalid bytes replaced", "a\xffb", 10, "a\uFFFDb"},
		{"cut at a rune boundary", strings.Repeat("é", 100), 40, strings.Repeat("é", 9) + " [cut from 200 bytes]"},
	} {
		got := deadletter.Text(c.in, c.max)
		if got != c.want || len(got) > c.max || !utf8.ValidString(got) {
			t.Errorf("%s: Text(%.20q, %d) = %q; want %q (valid UTF-8, at most %d bytes)", c.name, c.in, c.max, got, c.want, c.max)
		}
	}
}

// The worst input: 125 KB of invalid UTF-8 quoted into the error and
// copied into the body and raw. The bounded letter fits a DynamoDB item.
func TestBoundFitsAnItem(t *testing.T) {
	raw := bytes.Repeat([]byte{0xff}, 200<<10)
	l := deadletter.Bound(deadletter.Letter{Error: strings.Repeat("\\xff", 125<<10), Body: string(raw), Raw: raw})
	if n := len(l.Error) + len(l.Body) + len(l.Raw); n > 330<<10 {
		t.Errorf("bounded letter = %d bytes of error, body and raw; want under 330 KiB", n)
	}
	if len(l.Raw) != deadletter.MaxRaw || !utf8.ValidString(l.Body) || !utf8.ValidString(l.Error) {
		t.Errorf("bounded letter: raw %d bytes (want %d), body valid %v, error valid %v", len(l.Raw), deadletter.MaxRaw, utf8.ValidString(l.Body), utf8.ValidString(l.Error))
	}
}
