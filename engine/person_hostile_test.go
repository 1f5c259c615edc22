package engine_test

import (
	"errors"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestStrangerUnderOwnNameCannotSpeakForThisPerson: a device registered
// under bob's name that bob's account never listed (bob/9, as any stranger
// can register at a relay that does not keep device lists) sends bob/1 a
// sent copy and a decision. Both are dropped as not from an own device:
// no message appears in bob's conversation with alice as sent by him, and
// alice's pending message stays pending instead of being discarded
// without bob asking.
func TestStrangerUnderOwnNameCannotSpeakForThisPerson(t *testing.T) {
	w := newWorld(t)
	alice, bob, mallory := w.device("alice/1"), w.device("bob/1"), w.device("bob/9")
	id := alice.send(bob, "hello bob")
	bob.sync()
	if got := bob.pendingIn(); got != 1 {
		t.Fatalf("bob holds %d pending messages, want alice's one", got)
	}

	var copyID, decisionID wire.LogicalID
	copyID[0], decisionID[0] = 1, 2
	cp, err := wire.EncodeSentCopy(wire.SentCopy{ID: copyID, To: "alice/1", Body: []byte("forged by mallory")})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := wire.EncodeDecision(wire.Decision{ID: decisionID, Sender: "alice/1", Message: id, Outcome: wire.DecisionDiscarded})
	if err != nil {
		t.Fatal(err)
	}
	mallory.raw(bob, cp)
	mallory.raw(bob, dec)
	res := bob.sync()
	refused := 0
	for _, err := range errorsIn(res) {
		if errors.Is(err, engine.ErrNotOwnDevice) {
			refused++
		}
	}
	if refused != 2 {
		t.Fatalf("bob refused %d frames as not from an own device, want 2: %v", refused, res)
	}
	for _, r := range res {
		if r.Kind == engine.ResultSentCopy || r.Kind == engine.ResultDecisionHeard || r.Kind == engine.ResultDecided {
			t.Fatalf("bob took a frame from bob/9 as his own device's: %+v", r)
		}
	}
	if got := bob.pendingIn(); got != 1 {
		t.Fatalf("bob holds %d pending messages after the forged decision, want alice's still pending", got)
	}
	h, err := bob.c.History(w.ctx, alice.addr, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range h {
		if string(e.Body) == "forged by mallory" {
			t.Fatalf("bob's history with alice holds the forged copy: %+v", e)
		}
	}
}
