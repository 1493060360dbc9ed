package frame

import (
	"fmt"
	"hash/crc32"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// AppendRaw appends the raw (un-stuffed) bytes of f to dst: header, body,
// CRC-32C of both. It fails with ErrInvalid when a field is out of range.
func AppendRaw(dst []byte, f Frame) ([]byte, error) {
	if f.Body == nil {
		return dst, fmt.Errorf("%w: no body", ErrInvalid)
	}
	if err := f.Body.validate(); err != nil {
		return dst, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	start := len(dst)
	dst = append(dst, Version, byte(f.Body.Type()))
	dst = le.AppendUint32(dst, f.Seq)
	dst = le.AppendUint32(dst, f.UptimeMillis)
	dst = f.Body.appendTo(dst)
	if n := len(dst) - start - HeaderSize; n > MaxBody {
		return dst[:start], fmt.Errorf("%w: %s body of %d bytes exceeds %d", ErrInvalid, f.Body.Type(), n, MaxBody)
	}
	return le.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli)), nil
}

// Marshal returns the raw bytes of f (see AppendRaw).
func Marshal(f Frame) ([]byte, error) {
	return AppendRaw(make([]byte, 0, MaxRaw), f)
}

// Unmarshal parses one raw frame (COBS already removed). Errors wrap
// ErrShort, ErrOversize, ErrCRC, ErrVersion, ErrType or ErrBody.
func Unmarshal(raw []byte) (Frame, error) {
	if len(raw) < HeaderSize+CRCSize {
		return Frame{}, fmt.Errorf("%w: %d bytes, want at least %d", ErrShort, len(raw), HeaderSize+CRCSize)
	}
	if len(raw) > MaxRaw {
		return Frame{}, fmt.Errorf("%w: %d raw bytes, limit %d", ErrOversize, len(raw), MaxRaw)
	}
	n := len(raw) - CRCSize
	if got, want := crc32.Checksum(raw[:n], castagnoli), le.Uint32(raw[n:]); got != want {
		return Frame{}, fmt.Errorf("%w: computed %08x, frame says %08x", ErrCRC, got, want)
	}
	if raw[0] != Version {
		return Frame{}, fmt.Errorf("%w: %d", ErrVersion, raw[0])
	}
	body, err := decodeBody(Type(raw[1]), raw[HeaderSize:n])
	if err != nil {
		return Frame{}, err
	}
	return Frame{Seq: le.Uint32(raw[2:]), UptimeMillis: le.Uint32(raw[6:]), Body: body}, nil
}

// AppendEncoded appends f as it goes on the wire: COBS-stuffed raw bytes
// followed by the 0x00 delimiter.
func AppendEncoded(dst []byte, f Frame) ([]byte, error) {
	var raw [MaxRaw]byte
	r, err := AppendRaw(raw[:0], f)
	if err != nil {
		return dst, err
	}
	return append(appendCOBS(dst, r), 0), nil
}

// Encode returns f as it goes on the wire (see AppendEncoded).
func Encode(f Frame) ([]byte, error) {
	return AppendEncoded(make([]byte, 0, MaxEncoded+1), f)
}
