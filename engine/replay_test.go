package engine_test

import (
	"errors"
	"testing"

	"github.com/parley-chat/parley/engine"
)

// TestOneTimePreKeyReplayedForEver: a relay that hands out one consumed
// one-time prekey on every fetch gets the first initiation that uses it
// refused (unknown prekey), and no other: the refused key is recorded with
// the reset (and survives a restart), and the next initiation uses the
// signed prekeys alone, so carol converges within converge's bound.
func TestOneTimePreKeyReplayedForEver(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	w.net.ReplayOneTime(bob.addr)
	alice.send(bob, "from alice") // the key's one genuine use
	carol.send(bob, "from carol") // the same key, replayed
	res := bob.sync()
	refused := 0
	for _, r := range res {
		if r.Sender == carol.addr && r.Kind == engine.ResultError && errors.Is(r.Err, engine.ErrUnknownPreKey) && r.RecoveryRequested {
			refused++
		}
	}
	if refused != 1 {
		t.Fatalf("bob's results %+v: want carol's initiation refused (unknown prekey) with a recovery request", res)
	}
	if r := carol.sync(); count(r, engine.ResultSessionReset) != 1 {
		t.Fatalf("carol's results %+v: want one session reset", r)
	}
	carol.reopen()
	st, err := carol.st.Peer(w.ctx, bob.addr)
	if err != nil || len(st.RefusedOneTime) != 1 {
		t.Fatalf("carol's refused one-time prekeys of bob %v, %v: want the replayed one", st.RefusedOneTime, err)
	}
	converge(t, bob, carol)
	converge(t, bob, alice)
	if got := bob.received(carol); len(got) != 1 || got[0] != "from carol" {
		t.Fatalf("bob's history from carol %q", got)
	}
	// Later initiations (after another reset, say) skip the key too.
	for _, r := range bob.sync() {
		if errors.Is(r.Err, engine.ErrUnknownPreKey) {
			t.Fatalf("bob refused another initiation for an unknown prekey: %+v", r)
		}
	}
}
