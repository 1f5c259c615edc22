package engine

import (
	"testing"
	"time"
)

// TestRecoveryLimits: the same failure is asked about once per
// RecoveryRepeat; a peer gets at most RecoveryPerPeer requests per window;
// strangers share RecoveryStrangers; a refunded ticket gives its slot back;
// a session with one peer is reset at most once per RecoveryRepeat.
func TestRecoveryLimits(t *testing.T) {
	var l recoveryLimits
	now := time.Unix(1000, 0)
	bob, eve := MustParseAddress("bob/1"), MustParseAddress("eve/1")
	ref := func(b byte) [32]byte { return [32]byte{b} }

	tk, ok := l.allow(bob, ref(1), false, now)
	if !ok {
		t.Fatal("the first request is refused")
	}
	if _, ok := l.allow(bob, ref(1), false, now.Add(time.Second)); ok {
		t.Fatal("the same failure is asked about twice within RecoveryRepeat")
	}
	l.refund(tk)
	if _, ok := l.allow(bob, ref(1), false, now.Add(time.Second)); !ok {
		t.Fatal("a refunded request did not give its slot back")
	}
	for i := 2; i <= RecoveryPerPeer; i++ {
		if _, ok := l.allow(bob, ref(byte(i)), false, now); !ok {
			t.Fatalf("request %d to one peer refused", i)
		}
	}
	if _, ok := l.allow(bob, ref(99), false, now); ok {
		t.Fatalf("more than %d requests to one peer in a window", RecoveryPerPeer)
	}
	if _, ok := l.allow(bob, ref(1), false, now.Add(RecoveryWindow)); !ok {
		t.Fatal("a new window refused the peer")
	}

	var s recoveryLimits
	n := 0
	for i := 0; i < 100; i++ {
		peer := MustParseAddress("stranger" + string(rune('a'+i%26)) + "/" + string(rune('1'+i/26)))
		if _, ok := s.allow(peer, ref(1), true, now); ok {
			n++
		}
	}
	if n != RecoveryStrangers {
		t.Fatalf("strangers got %d requests, want %d", n, RecoveryStrangers)
	}
	if _, ok := s.allow(eve, ref(1), false, now); !ok {
		t.Fatal("strangers used up the budget of a peer with a session")
	}

	if !l.canReset(bob, now) {
		t.Fatal("a first reset is refused")
	}
	l.reset(bob, now)
	if l.canReset(bob, now.Add(RecoveryRepeat-time.Second)) {
		t.Fatal("a second reset within RecoveryRepeat")
	}
	if !l.canReset(eve, now) || !l.canReset(bob, now.Add(RecoveryRepeat)) {
		t.Fatal("a reset of another peer, or after RecoveryRepeat, is refused")
	}
}
