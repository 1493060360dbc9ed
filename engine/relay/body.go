package relay

import (
	"fmt"
	"strings"
)

// validBodyRune reports whether SQS accepts r in a message body: #x9 | #xA
// | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF, the XML
// character set (SendMessage API reference: anything else fails with
// InvalidMessageContents, and a FIFO entry that fails blocks nothing but
// itself, so the event would never arrive).
func validBodyRune(r rune) bool {
	return r == 0x9 || r == 0xA || r == 0xD || 0x20 <= r && r <= 0xD7FF || 0xE000 <= r && r <= 0xFFFD || 0x10000 <= r && r <= 0x10FFFF
}

// EscapeJSON returns the JSON text js with every character SQS refuses in a
// message body written as a \uXXXX escape. Such characters can only occur
// inside JSON strings (JSON's own syntax is ASCII), where the escape is
// the same string to every JSON decoder: the decoded values, and so the
// event hash over their JCS form (docs/chain.md), do not change.
// encoding/json already escapes the C0 controls; what remains is U+FFFE
// and U+FFFF, which it writes raw.
func EscapeJSON(js string) string {
	i := strings.IndexFunc(js, func(r rune) bool { return !validBodyRune(r) })
	if i < 0 {
		return js
	}
	var b strings.Builder
	b.Grow(len(js) + 16)
	b.WriteString(js[:i])
	for _, r := range js[i:] {
		if validBodyRune(r) {
			b.WriteRune(r)
			continue
		}
		// Every refused character is below U+10000: one escape.
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

// bodyProblem says why SQS can never accept body, or "" when it can.
func bodyProblem(body string, limit int) string {
	if len(body) > limit {
		return fmt.Sprintf("body of %d bytes exceeds SQS's %d-byte message limit", len(body), limit)
	}
	if i := strings.IndexFunc(body, func(r rune) bool { return !validBodyRune(r) }); i >= 0 {
		return fmt.Sprintf("body holds a character SQS refuses at byte %d", i)
	}
	return ""
}
