package wire_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/parley-chat/parley/wire"
)

// TestAuthMessage pins the layout of the signed authentication message:
// label, nonce, relay ID, address with its length, signing key, expiry.
func TestAuthMessage(t *testing.T) {
	var nonce, relayID, key [32]byte
	for i := range 32 {
		nonce[i], relayID[i], key[i] = byte(i), byte(0x40+i), byte(0x80+i)
	}
	const addr = "alice/1"
	const expires = int64(1767225600)
	got := wire.AuthMessage(nonce, relayID, addr, key, expires)

	var want []byte
	want = append(want, "parley/v1/relay-auth"...)
	want = append(want, nonce[:]...)
	want = append(want, relayID[:]...)
	want = append(want, byte(len(addr)))
	want = append(want, addr...)
	want = append(want, key[:]...)
	want = binary.BigEndian.AppendUint64(want, uint64(expires))
	if !bytes.Equal(got, want) {
		t.Fatalf("AuthMessage:\n got %x\nwant %x", got, want)
	}
	if !bytes.HasPrefix(got, []byte(wire.AuthLabel)) {
		t.Fatalf("AuthMessage does not open with %q", wire.AuthLabel)
	}
	// Every bound field changes the message.
	other := wire.AuthMessage(nonce, relayID, "alice/2", key, expires)
	if bytes.Equal(got, other) {
		t.Fatal("the address is not bound")
	}
	if bytes.Equal(got, wire.AuthMessage(nonce, relayID, addr, key, expires+1)) {
		t.Fatal("the expiry is not bound")
	}
}
