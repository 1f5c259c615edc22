package session

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/parley-chat/parley/wire"
)

// senderChainVector pins the sender chain's key schedule: from a fixed
// seed, the chain's record, its announcement, three chain messages (the
// second with an empty body) and the receiver's record after opening the
// third and then the first (one skipped key kept). Any change to a
// derivation, a label or a layout changes at least one of these.
type senderChainVector struct {
	Note         string   `json:"note"`
	SenderRecord string   `json:"sender_chain_record"`
	Announcement string   `json:"announcement_frame"`
	Messages     []string `json:"chain_messages"`
	Receiver     string   `json:"receiver_chain_record"`
}

func buildSenderChainVector(t *testing.T) senderChainVector {
	r := newDetRand(0xc4)
	c, err := NewSenderChain(r, wire.GroupID{0x38}, 7, testNow)
	if err != nil {
		t.Fatal(err)
	}
	v := senderChainVector{Note: "sender chain of group 38000000..., generation 7, by alice/1; randomness ChaCha8 of 0xc4 repeated; bodies \"one\", \"\", \"three\""}
	rec, _ := c.MarshalBinary()
	v.SenderRecord = hex.EncodeToString(rec)
	a := c.Announce(wire.LogicalID{0x0a})
	ab, err := wire.EncodeChainAnnounce(a)
	if err != nil {
		t.Fatal(err)
	}
	v.Announcement = hex.EncodeToString(ab)
	var ms []wire.ChainMessage
	for _, body := range []string{"one", "", "three"} {
		m, err := c.Seal(r, "alice/1", []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		mb, err := wire.EncodeChainMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
		v.Messages = append(v.Messages, hex.EncodeToString(mb))
	}
	rc := NewReceiverChain("alice/1", a)
	for _, i := range []int{2, 0} {
		if _, err := rc.Open("alice/1", ms[i]); err != nil {
			t.Fatalf("open message %d: %v", i, err)
		}
	}
	rb, _ := rc.MarshalBinary()
	v.Receiver = hex.EncodeToString(rb)
	return v
}

// TestFrozenSenderChainVector pins version 1 of the sender chain.
func TestFrozenSenderChainVector(t *testing.T) {
	path := filepath.Join("..", "..", "testdata", "engine", "sender_chain_vector.json")
	got := buildSenderChainVector(t)
	if *update {
		if _, err := os.Stat(path); err == nil {
			t.Fatalf("%s exists: frozen vectors never change", path)
		}
		b, _ := json.MarshalIndent(got, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want senderChainVector
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		gi, _ := json.MarshalIndent(got, "", "  ")
		t.Fatalf("the sender chain changed; frozen vector %s differs from:\n%s", path, gi)
	}
	// The frozen messages open from the frozen announcement, in any order.
	ab, _ := hex.DecodeString(want.Announcement)
	a, err := wire.DecodeChainAnnounce(ab)
	if err != nil {
		t.Fatal(err)
	}
	rc := NewReceiverChain("alice/1", a)
	for i, body := range map[int]string{1: "", 0: "one", 2: "three"} {
		mb, _ := hex.DecodeString(want.Messages[i])
		m, err := wire.DecodeChainMessage(mb)
		if err != nil {
			t.Fatal(err)
		}
		if pt, err := rc.Open("alice/1", m); err != nil || string(pt) != body {
			t.Fatalf("frozen message %d: %q, %v", i, pt, err)
		}
	}
}
