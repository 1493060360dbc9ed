package agent

import (
	"strings"
	"unicode/utf8"

	"github.com/bowline-iot/bowline/edge/wire"
)

// cleanDetail makes a firmware fault detail acceptable to
// wire.CheckText(…, wire.MaxDetailLen), the check ingest applies to
// bowl.device_fault's detail (wire.DeviceFault, wire.Decode). The firmware sends
// 0-64 bytes of UTF-8 that may hold control characters
// (firmware-bridge/PROTOCOL.md); a detail ingest refuses would lose the
// whole fault. Each invalid byte, control character (but tab and newline)
// and noncharacter U+FFFE/U+FFFF becomes U+FFFD, so the readable parts
// keep their places; the result is cut at a character boundary to the wire
// bound. docs/contract.md, "Field bounds".
func cleanDetail(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !textAllowed(r, size) {
			r = utf8.RuneError
		}
		if b.Len()+utf8.RuneLen(r) > wire.MaxDetailLen {
			break
		}
		b.WriteRune(r)
		i += size
	}
	return b.String()
}

// textAllowed mirrors wire.CheckText's rule for one decoded rune of size
// bytes (an invalid byte decodes as U+FFFD of size 1).
func textAllowed(r rune, size int) bool {
	switch {
	case r == utf8.RuneError && size == 1:
		return false
	case r < 0x20 && r != '\t' && r != '\n', 0x7f <= r && r <= 0x9f, r == 0xFFFE, r == 0xFFFF:
		return false
	}
	return true
}
