package engine_test

import (
	"errors"
	"iter"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/engine"
)

// sealedChain returns n events of tenant, seqs 1..n, sealed in order from
// Genesis, and the head they end at.
func sealedChain(t *testing.T, tenant string, n int) ([]engine.Envelope, engine.Head) {
	t.Helper()
	out := make([]engine.Envelope, n)
	prev := engine.Genesis
	for i := range out {
		out[i] = engine.Envelope{
			ID: "ev" + string(rune('a'+i)), Type: "bowl.meal_finished", Tenant: tenant, Actor: "bowl-1",
			OccurredAt: time.Date(2026, 12, 1, 0, 0, i, 0, time.UTC), Payload: map[string]any{"i": float64(i + 1)}, Seq: uint64(i + 1),
		}
		if err := engine.Seal(&out[i], prev); err != nil {
			t.Fatal(err)
		}
		prev = out[i].Hash
	}
	return out, engine.Head{Found: true, Seq: uint64(n), Hash: prev}
}

// rows yields envs as Log.After would, with errs[i] in place of envs[i]
// where one is set.
func rows(envs []engine.Envelope, errs map[int]error) iter.Seq2[engine.Envelope, error] {
	return func(yield func(engine.Envelope, error) bool) {
		for i, env := range envs {
			if err := errs[i]; err != nil {
				env = engine.Envelope{}
				if !yield(env, err) {
					return
				}
				continue
			}
			if !yield(env, nil) {
				return
			}
		}
	}
}

// CheckChain is driven with hand-made logs, no table: each case changes a
// good chain of six events the way a writer of the table could and names
// where and why the check must break.
func TestCheckChainFindings(t *testing.T) {
	const tenant = "t1"
	tests := []struct {
		name string
		// change edits the log and the head; it gets fresh copies.
		change     func(log []engine.Envelope, head *engine.Head) ([]engine.Envelope, map[int]error)
		wantSeq    uint64
		wantReason engine.Reason
	}{
		{"good chain", func(log []engine.Envelope, _ *engine.Head) ([]engine.Envelope, map[int]error) { return log, nil }, 0, ""},
		{"tampered payload", func(log []engine.Envelope, _ *engine.Head) ([]engine.Envelope, map[int]error) {
			log[3].Payload = map[string]any{"i": 400.0}
			return log, nil
		}, 4, engine.ReasonHashMismatch},
		{"tampered stored hash", func(log []engine.Envelope, _ *engine.Head) ([]engine.Envelope, map[int]error) {
			log[1].Hash = engine.Genesis
			return log, nil
		}, 2, engine.ReasonHashMismatch},
		{"gap", func(log []engine.Envelope, _ *engine.Head) ([]engine.Envelope, map[int]error) {
			return append(log[:2:2], log[3:]...), nil
		}, 3, engine.ReasonGap},
		{"reordered seq", func(log []engine.Envelope, _ *engine.Head) ([]engine.Envelope, map[int]error) {
			log[2], log[3] = log[3], log[2]
			return log, nil
		}, 3, engine.ReasonGap},
		{"seq twice", func(log []engine.Envelope, _ *engine.Head) ([]engine.Envelope, map[int]error) {
			return append(log[:3:3], log[2:]...), nil
		}, 3, engine.ReasonDuplicate},
		{"sort key names another seq", func(log []engine.Envelope, _ *engine.Head) ([]engine.Envelope, map[int]error) {
			return log, map[int]error{2: &engine.RowError{Tenant: tenant, Key: 3, Seq: 5, Err: errors.New(`sort key "…03" holds seq 5`)}}
		}, 3, engine.ReasonDuplicate},
		{"undecodable row", func(log []engine.Envelope, _ *engine.Head) ([]engine.Envelope, map[int]error) {
			return log, map[int]error{4: &engine.RowError{Tenant: tenant, Key: 5, Err: errors.New(`attribute "payload" missing`)}}
		}, 5, engine.ReasonMalformed},
		{"row of another tenant", func(log []engine.Envelope, _ *engine.Head) ([]engine.Envelope, map[int]error) {
			other, _ := sealedChain(t, "t2", 6)
			log[1] = other[1]
			return log, nil
		}, 2, engine.ReasonHashMismatch},
		{"row sealed onto another chain", func(log []engine.Envelope, _ *engine.Head) ([]engine.Envelope, map[int]error) {
			if err := engine.Seal(&log[4], engine.Genesis); err != nil {
				t.Fatal(err)
			}
			return log, nil
		}, 5, engine.ReasonPrevHashMismatch},
		{"no head", func(log []engine.Envelope, head *engine.Head) ([]engine.Envelope, map[int]error) {
			*head = engine.Head{Hash: engine.Genesis}
			return log, nil
		}, 1, engine.ReasonMissingHead},
		{"newest row gone", func(log []engine.Envelope, _ *engine.Head) ([]engine.Envelope, map[int]error) {
			return log[:5], nil
		}, 6, engine.ReasonHeadAhead},
		{"head behind", func(log []engine.Envelope, head *engine.Head) ([]engine.Envelope, map[int]error) {
			head.Seq, head.Hash = 4, log[3].Hash
			return log, nil
		}, 5, engine.ReasonHeadBehind},
		{"head hash", func(log []engine.Envelope, head *engine.Head) ([]engine.Envelope, map[int]error) {
			head.Hash = log[4].Hash
			return log, nil
		}, 6, engine.ReasonHeadHashMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, head := sealedChain(t, tenant, 6)
			log, errs := tt.change(log, &head)
			rep, err := engine.CheckChain(engine.ChainCheck{Tenant: tenant, From: engine.GenesisPoint}, rows(log, errs), head)
			if err != nil {
				t.Fatalf("CheckChain: %v; want a report", err)
			}
			if rep.Intact != (tt.wantReason == "") || rep.FirstBadSeq != tt.wantSeq || rep.Reason != tt.wantReason {
				t.Errorf("CheckChain = intact %v, first bad seq %d, reason %q (%s); want seq %d, reason %q",
					rep.Intact, rep.FirstBadSeq, rep.Reason, rep.Detail, tt.wantSeq, tt.wantReason)
			}
			if tt.wantReason == "" && (rep.Events != 6 || rep.Verified != (engine.ChainPoint{Seq: 6, Hash: head.Hash}) || rep.HeadSeq != 6) {
				t.Errorf("CheckChain(good chain) = %+v; want 6 events verified through the head", rep)
			}
		})
	}
}

// A checkpoint (ChainCheck.From) is compared, not counted; a limit makes
// the report Partial before the head; anchors catch a resealed rewrite.
func TestCheckChainPositions(t *testing.T) {
	const tenant = "t1"
	log, head := sealedChain(t, tenant, 6)
	check := func(c engine.ChainCheck, events []engine.Envelope, head engine.Head) engine.ChainReport {
		t.Helper()
		c.Tenant = tenant
		rep, err := engine.CheckChain(c, rows(events, nil), head)
		if err != nil {
			t.Fatalf("CheckChain(%+v): %v", c, err)
		}
		return rep
	}
	at := func(i int) engine.ChainPoint { return engine.ChainPoint{Seq: log[i].Seq, Hash: log[i].Hash} }

	if rep := check(engine.ChainCheck{From: at(2)}, log[2:], head); !rep.Intact || rep.Events != 3 || rep.Verified != at(5) {
		t.Errorf("from seq 3 = %+v; want intact, 3 events, verified through seq 6", rep)
	}
	if rep := check(engine.ChainCheck{From: engine.ChainPoint{Seq: 3, Hash: engine.Genesis}}, log[2:], head); rep.Intact || rep.FirstBadSeq != 3 || rep.Reason != engine.ReasonHashMismatch {
		t.Errorf("from seq 3 with a hash it never had = %+v; want hash mismatch at 3", rep)
	}
	if rep := check(engine.ChainCheck{From: at(2)}, log[3:], head); rep.Intact || rep.FirstBadSeq != 3 || rep.Reason != engine.ReasonGap {
		t.Errorf("from seq 3 without its row = %+v; want gap at 3", rep)
	}
	if rep := check(engine.ChainCheck{From: at(5)}, nil, head); rep.Intact || rep.FirstBadSeq != 6 || rep.Reason != engine.ReasonGap {
		t.Errorf("from seq 6 of an empty log = %+v; want gap at 6", rep)
	}

	if rep := check(engine.ChainCheck{From: engine.GenesisPoint, Limit: 4}, log, head); !rep.Intact || !rep.Partial || rep.Events != 4 || rep.Verified != at(3) {
		t.Errorf("limit 4 = %+v; want intact, partial, 4 events, verified through seq 4", rep)
	}
	if rep := check(engine.ChainCheck{From: engine.GenesisPoint, Limit: 6}, log, head); !rep.Intact || rep.Partial || rep.Events != 6 {
		t.Errorf("limit 6 of 6 = %+v; want intact and complete", rep)
	}

	// Rewritten from seq 4 on and resealed: the chain checks out by itself.
	resealed := append([]engine.Envelope(nil), log...)
	resealed[3].Payload = map[string]any{"i": 400.0}
	for i := 3; i < len(resealed); i++ {
		if err := engine.Seal(&resealed[i], resealed[i-1].Hash); err != nil {
			t.Fatal(err)
		}
	}
	newHead := engine.Head{Found: true, Seq: 6, Hash: resealed[5].Hash}
	if rep := check(engine.ChainCheck{From: engine.GenesisPoint}, resealed, newHead); !rep.Intact {
		t.Fatalf("resealed chain alone = %+v; want intact (only anchors can tell)", rep)
	}
	rep := check(engine.ChainCheck{From: engine.GenesisPoint, Anchors: []engine.ChainPoint{at(4), at(1), {}}}, resealed, newHead)
	if rep.Intact || rep.FirstBadSeq != 5 || rep.Reason != engine.ReasonAnchorMismatch || rep.Anchors != 2 || rep.AnchoredSeq != 5 {
		t.Errorf("resealed chain against anchors at 2 and 5 = %+v; want anchor mismatch at 5 after 2 anchors", rep)
	}
	rep = check(engine.ChainCheck{From: engine.GenesisPoint, Anchors: []engine.ChainPoint{at(5)}}, log[:4], engine.Head{Found: true, Seq: 4, Hash: log[3].Hash})
	if rep.Intact || rep.FirstBadSeq != 5 || rep.Reason != engine.ReasonAnchorAhead {
		t.Errorf("log cut to seq 4 against an anchor at 6 = %+v; want anchor ahead at 5", rep)
	}
}

// A failed read is an error, not a finding.
func TestCheckChainReadError(t *testing.T) {
	log, head := sealedChain(t, "t1", 3)
	boom := errors.New("throttled")
	rep, err := engine.CheckChain(engine.ChainCheck{Tenant: "t1"}, rows(log, map[int]error{1: boom}), head)
	if !errors.Is(err, boom) || rep.Events != 1 {
		t.Errorf("CheckChain with a read error at the 2nd row = %+v, %v; want the error after 1 event", rep, err)
	}
}
