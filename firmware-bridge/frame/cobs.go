package frame

// appendCOBS appends the COBS encoding of src to dst (without delimiter).
// Consistent Overhead Byte Stuffing removes every 0x00 from src at a cost
// of one byte per 254, so 0x00 can delimit frames on the wire.
func appendCOBS(dst, src []byte) []byte {
	codeAt := len(dst)
	dst = append(dst, 0)
	code := byte(1)
	for i, c := range src {
		if c != 0 {
			dst = append(dst, c)
			code++
		}
		// A full block (254 data bytes) at the very end needs no new block.
		if c == 0 || (code == 0xFF && i < len(src)-1) {
			dst[codeAt] = code
			codeAt = len(dst)
			dst = append(dst, 0)
			code = 1
		}
	}
	dst[codeAt] = code
	return dst
}

// decodeCOBS decodes src (no delimiter, no 0x00 inside) into dst and
// returns the decoded length. It fails with ErrCOBS on a code byte that
// points past the end or on a 0x00, and with ErrOversize when dst is too
// small. It never writes past len(dst).
func decodeCOBS(dst, src []byte) (int, error) {
	n := 0
	for i := 0; i < len(src); {
		code := int(src[i])
		if code == 0 || i+code > len(src) {
			return 0, ErrCOBS
		}
		i++
		for j := 1; j < code; j++ {
			if src[i] == 0 {
				return 0, ErrCOBS
			}
			if n == len(dst) {
				return 0, ErrOversize
			}
			dst[n] = src[i]
			n++
			i++
		}
		if code < 0xFF && i < len(src) {
			if n == len(dst) {
				return 0, ErrOversize
			}
			dst[n] = 0
			n++
		}
	}
	return n, nil
}
