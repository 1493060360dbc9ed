package engine_test

import (
	"errors"
	"testing"

	"github.com/bowline-iot/bowline/engine"
)

// TestParseEventKey: only the key Emit gives an event row parses, back to
// its tenant and seq; every look-alike fails with ErrNotEventKey.
func TestParseEventKey(t *testing.T) {
	for _, tc := range []struct {
		tenant string
		seq    uint64
	}{{"t1", 1}, {"acme-co.eu:1", 42}, {"T_2", 18446744073709551615}} {
		tenant, seq, err := engine.ParseEventKey(engine.EventPK(tc.tenant), engine.SeqSK(tc.seq))
		if err != nil || tenant != tc.tenant || seq != tc.seq {
			t.Errorf("ParseEventKey(%q, %q) = %q, %d, %v; want %q, %d", engine.EventPK(tc.tenant), engine.SeqSK(tc.seq), tenant, seq, err, tc.tenant, tc.seq)
		}
	}
	for _, tc := range []struct{ pk, sk string }{
		{"X#EVENT", engine.SeqSK(1)},
		{"tenant#t1#EVENT", engine.SeqSK(1)},
		{"TENANT#EVENT", engine.SeqSK(1)},
		{"TENANT##EVENT", engine.SeqSK(1)},
		{"TENANT#a#b#EVENT", engine.SeqSK(1)},
		{"TENANT#t1#EVENTS", engine.SeqSK(1)},
		{"TENANT#t1#event", engine.SeqSK(1)},
		{" TENANT#t1#EVENT", engine.SeqSK(1)},
		{engine.HeadPK("t1"), engine.HeadSK},
		{engine.EventPK("t1"), engine.SeqSK(0)},
		{engine.EventPK("t1"), "1"},
		{engine.EventPK("t1"), "0000000000000000000x"},
		{engine.EventPK("t1"), "-0000000000000000001"},
		{engine.EventPK("t1"), "99999999999999999999"},
		{engine.EventPK("t1"), ""},
	} {
		if _, _, err := engine.ParseEventKey(tc.pk, tc.sk); !errors.Is(err, engine.ErrNotEventKey) {
			t.Errorf("ParseEventKey(%q, %q) = %v; want ErrNotEventKey", tc.pk, tc.sk, err)
		}
	}
}
