package frame

import (
	"encoding/binary"
	"hash/crc32"
)

// sampleFrames has one frame of every type, some at the edges of their
// ranges. The golden vectors in testdata are generated from it (-update).
var sampleFrames = []struct {
	name string
	f    Frame
}{
	{"hello", Frame{Seq: 1, UptimeMillis: 12, Body: Hello{DeviceID: "bowl-0001", Firmware: [3]uint8{1, 4, 2}, Capabilities: CapWeight | CapTemperature | CapBattery | CapRFID | CapLid, RingSize: 64, SampleRateHz: 50}}},
	{"hello_boot_epoch", Frame{Seq: 1, UptimeMillis: 12, Body: Hello{DeviceID: "bowl-0001", Firmware: [3]uint8{2, 0, 0}, Capabilities: CapWeight | CapTemperature | CapBattery | CapRFID | CapLid, RingSize: 64, SampleRateHz: 50, BootEpoch: 0x9ABC0DEF}}},
	{"weight_one", Frame{Seq: 2, UptimeMillis: 1000, Body: WeightBatch{RateHz: 50, Milligrams: []int32{412500}}}},
	{"weight_full", Frame{Seq: 3, UptimeMillis: 2000, Body: WeightBatch{RateHz: 50, Milligrams: fullBatch()}}},
	{"weight_negative", Frame{Seq: 4, UptimeMillis: 3000, Body: WeightBatch{RateHz: 10, Milligrams: []int32{-1500, 0, 2147483647, -2147483648}}}},
	{"temperature", Frame{Seq: 5, UptimeMillis: 4000, Body: Temperature{CentiCelsius: -1234}}},
	{"battery", Frame{Seq: 6, UptimeMillis: 5000, Body: Battery{Millivolts: 3712, Percent: 81, Charging: true}}},
	{"tag", Frame{Seq: 7, UptimeMillis: 6000, Body: TagSeen{Tag: "900215000123456", RSSI: -47}}},
	{"lid_open", Frame{Seq: 8, UptimeMillis: 7000, Body: Lid{State: LidOpen}}},
	{"lid_tamper", Frame{Seq: 9, UptimeMillis: 7001, Body: Lid{State: LidTamper}}},
	{"fault", Frame{Seq: 10, UptimeMillis: 8000, Body: Fault{Code: FaultLoadCell, Detail: "hx711 timeout"}}},
	{"fault_empty_detail", Frame{Seq: 11, UptimeMillis: 8001, Body: Fault{Code: FaultRingOverflow}}},
	{"pong", Frame{Seq: 12, UptimeMillis: 9000, Body: Pong{Token: 0xDEADBEEF}}},
	{"seq_wrap", Frame{Seq: 0xFFFFFFFF, UptimeMillis: 0xFFFFFFFF, Body: Temperature{CentiCelsius: 2150}}},
	{"ack", Frame{Seq: 1, Body: Ack{Cumulative: 11}}},
	{"ack_resend", Frame{Seq: 2, Body: Ack{Cumulative: 0xFFFFFFFF, Resend: true}}},
	{"tare", Frame{Seq: 3, Body: Tare{}}},
	{"set_rate", Frame{Seq: 4, Body: SetRate{RateHz: 100}}},
	{"time_sync", Frame{Seq: 5, Body: TimeSync{Token: 7, UnixMillis: 1767225600000}}},
	{"ping", Frame{Seq: 6, Body: Ping{Token: 8, WantHello: true}}},
}

func fullBatch() []int32 {
	s := make([]int32, MaxSamples)
	for i := range s {
		s[i] = int32(250000 + i*37 - (i%3)*500)
	}
	return s
}

// mustRaw marshals f or panics (fixtures only).
func mustRaw(f Frame) []byte {
	b, err := Marshal(f)
	if err != nil {
		panic(err)
	}
	return b
}

// reCRC replaces the CRC of raw after a mutation.
func reCRC(raw []byte) []byte {
	n := len(raw) - CRCSize
	binary.LittleEndian.PutUint32(raw[n:], crc32.Checksum(raw[:n], castagnoli))
	return raw
}

func wire(raw []byte) []byte { return append(appendCOBS(nil, raw), 0) }

// invalidFrames are wire bytes the decoder must drop, with the reason.
func invalidFrames() []struct {
	name   string
	wire   []byte
	reason Reason
} {
	temp := mustRaw(Frame{Seq: 5, UptimeMillis: 4000, Body: Temperature{CentiCelsius: -1234}})
	mut := func(f func(b []byte) []byte) []byte { return wire(f(append([]byte(nil), temp...))) }
	badCount := mustRaw(Frame{Seq: 3, Body: WeightBatch{RateHz: 50, Milligrams: []int32{1, 2}}})
	badCount[HeaderSize+2] = 3
	reCRC(badCount)
	ack := mustRaw(Frame{Seq: 1, Body: Ack{Cumulative: 11}})
	ack[HeaderSize+4] = 2
	reCRC(ack)
	epochZero := append(mustRaw(Frame{Seq: 1, Body: Hello{DeviceID: "b", SampleRateHz: 50}})[:HeaderSize+1+1+3+6], 0, 0, 0, 0, 0, 0, 0, 0)
	reCRC(epochZero)
	long := make([]byte, MaxEncoded+10)
	for i := range long {
		long[i] = 0x55
	}
	return []struct {
		name   string
		wire   []byte
		reason Reason
	}{
		{"bad_crc", mut(func(b []byte) []byte { b[len(b)-1] ^= 0x01; return b }), ReasonCRC},
		{"flipped_body_bit", mut(func(b []byte) []byte { b[HeaderSize] ^= 0x10; return b }), ReasonCRC},
		{"version_2", mut(func(b []byte) []byte { b[0] = 2; return reCRC(b) }), ReasonVersion},
		{"unknown_type", mut(func(b []byte) []byte { b[1] = 0x7F; return reCRC(b) }), ReasonType},
		{"truncated", wire(temp[:8]), ReasonShort},
		{"truncated_body", mut(func(b []byte) []byte { return reCRC(append(b[:HeaderSize+1], 0, 0, 0, 0)) }), ReasonBody},
		{"sample_count_mismatch", wire(badCount), ReasonBody},
		{"reserved_flag", wire(ack), ReasonBody},
		{"hello_boot_epoch_zero", wire(epochZero), ReasonBody},
		{"bad_cobs", []byte{0x05, 0x01, 0x02, 0x00}, ReasonCOBS},
		{"oversize", append(long, 0), ReasonOversize},
	}
}
