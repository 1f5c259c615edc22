package e2e

import (
	"strings"
	"testing"
)

// kindsOf returns the kinds of the sync records about message id.
func kindsOf(recs []map[string]any, id string) []string {
	var out []string
	for _, r := range recs {
		if r["id"] == id {
			out = append(out, r["kind"].(string))
		}
	}
	return out
}

// TestCLIRemoveAdoptsSentMessage: bob writes first (so alice's devices
// accept him); alice/2 writes to bob, and alice/1 holds the sent copy.
// bob has it committed when alice/1 removes alice/2, which resends it
// from alice/1 under the same ID (adoption): bob's sync reports it
// already committed, his history holds it once, and alice/1's history
// shows it acknowledged.
func TestCLIRemoveAdoptsSentMessage(t *testing.T) {
	relay := startRelay(t, "--device-lists")
	alice := newProfile(t, relay, "alice/1")
	bob := newProfile(t, relay, "bob/1")
	alice.sync()
	bob.sync()
	alice2 := linkDevice(t, relay, alice, "alice/2")
	alice2.sync()

	id := strings.TrimSpace(alice2.ok("send", "bob", "from the phone"))
	if got := kindsOf(alice.sync(), id); len(got) != 1 || got[0] != "sent_copy" {
		t.Fatalf("alice/1's sync: %v, want the sent copy of %s", got, id)
	}
	if got := kindsOf(bob.sync(), id); len(got) != 1 {
		t.Fatalf("bob's sync: %v, want alice/2's message once", got)
	}
	bob.commitAll()

	if rm := alice.jsonLines("device", "remove", "alice/2", "--yes"); len(rm) != 1 || rm[0]["removed"] != "alice/2" {
		t.Fatalf("device remove printed %v", rm)
	}
	// The removal handed the adopted lane off.
	if got := kindsOf(bob.sync(), id); len(got) != 1 || got[0] != "already_committed" {
		t.Fatalf("bob's sync of the resend: %v, want it already committed", got)
	}
	var in []map[string]any
	for _, r := range bob.jsonLines("history", "alice/1") {
		if r["direction"] == "in" && r["id"] == id {
			in = append(in, r)
		}
	}
	if len(in) != 1 || in[0]["body"] != "from the phone" {
		t.Fatalf("bob's history rows of %s: %v, want one", id, in)
	}
	alice.sync()
	for _, r := range alice.jsonLines("history", "bob/1") {
		if r["id"] == id && r["state"] != "acknowledged" {
			t.Errorf("alice/1's row of the adopted message: %v, want acknowledged", r)
		}
	}
}
