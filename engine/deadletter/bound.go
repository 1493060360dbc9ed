package deadletter

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Bounds of a letter. A DynamoDB item is at most 400 KB, names and values
// together, and a letter over it can never be written; so every letter is
// cut to fit well under it whatever its input (docs/dead-letters.md):
//
//	error  MaxError bytes of valid UTF-8
//	body   MaxBody bytes of valid UTF-8
//	raw    MaxRaw bytes (binary, counted byte for byte)
//
// 1 KiB + 192 KiB + 128 KiB plus a few short attributes is under 330 KB.
const (
	// MaxError bounds Letter.Error: a reason, not a copy of the input.
	MaxError = 1 << 10
	// MaxBody bounds Letter.Body, text that must stay readable (an SQS
	// message is at most 256 KiB; a worker letter keeps its first 192 KiB).
	MaxBody = 192 << 10
	// MaxRaw bounds Letter.Raw: the 128 KB limit of an AWS IoT MQTT
	// payload, so a device message is always kept whole.
	MaxRaw = 128 << 10

	// TTL is how long a letter or poison pill lives before DynamoDB's TTL
	// may delete it (attribute AttrTTL, epoch seconds): 14 days, the
	// longest an SQS queue keeps a message (so a worker letter never
	// outlives the DLQ message redrive needs) and shorter than the 30 days
	// the engine keeps idempotency keys (so replaying a letter always meets
	// the key of an event it already produced). Long enough for an alarm,
	// a fix and a replay across a weekend; it bounds the table when a
	// device floods it.
	TTL = 14 * 24 * time.Hour
	// AttrTTL is the dead_letters table's TTL attribute.
	AttrTTL = "ttl"
)

// Bound returns l with Error, Body and Raw cut to their bounds; Error and
// Body also become valid UTF-8 (invalid bytes are replaced, so quoting
// device bytes cannot grow a letter past its bound). RawSize and RawSHA256
// are left as the caller set them: they describe the whole input.
func Bound(l Letter) Letter {
	l.Error = Text(l.Error, MaxError)
	l.Body = Text(l.Body, MaxBody)
	if len(l.Raw) > MaxRaw {
		l.Raw = l.Raw[:MaxRaw]
	}
	return l
}

// Text returns s as valid UTF-8 (each run of invalid bytes replaced by
// U+FFFD) cut at a rune boundary to at most max bytes, the cut marked with
// the length it was cut from.
func Text(s string, max int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= max {
		return s
	}
	mark := fmt.Sprintf(" [cut from %d bytes]", len(s))
	n := max - len(mark)
	if n < 0 {
		n = 0
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + mark
}
