// Package frame is the codec of the bowl MCU's UART protocol, version 1:
// the frame types and their bodies, the byte layout (header, body, CRC-32C),
// COBS framing with a 0x00 delimiter, and a streaming Decoder that skips bad
// input, counts it by reason and resynchronises at the next delimiter.
//
// The normative description of the bytes is firmware-bridge/PROTOCOL.md;
// firmware-bridge/testdata/vectors.json holds golden vectors (hex and the
// decoded JSON) that the firmware team tests its C codec against.
//
// # Encoding is canonical
//
// Unmarshal accepts exactly the bytes Marshal produces: reserved flag bits,
// trailing bytes, out-of-range fields and invalid strings are errors. So for
// any raw frame r, if Unmarshal(r) succeeds then Marshal of the result is r.
// The fuzz test checks this.
//
// # Caveats
//
// The Decoder is not safe for concurrent use; its Stats method is. Bodies
// hold slices (WeightBatch.Milligrams) that the Decoder allocates fresh for
// each frame, so a caller may keep them.
package frame
